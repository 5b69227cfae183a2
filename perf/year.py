"""A year of the platform's re-tests, bulk-loaded for `make bench`'s "year" section (#35).

The re-test plan is 4 a day on every host: at 10,000 hosts that is 14.6 million re-tests a
year, each a job, a run and a Retest row, with the figures of the "retest" suite (network and
storage: 7 samples), some 100 million samples. They are written as the platform writes them
(``created_at`` the run's end, so each lands in its month's partition, made first as the
sweeper makes them ahead), month by month, each month one transaction of server-side
``INSERT ... SELECT`` over ``generate_series``: the rows never cross the wire, which at this
size is the difference between minutes and hours. Foreign-key triggers are off while loading
(``session_replication_role = replica``, as pg_restore does): every id is made here, in order.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any

import psycopg
from psycopg import sql

from jobs.services.partitions import Month

# The "retest" suite's figures (network and storage), each with the metadata shape its probe
# writes: a reference test carries its peer, the interval its repetitions reached, the
# precision asked, its wait and its cookies; a storage figure its device and conditions.
METRICS = (("network.tcp_throughput", "Gbit/s", True),
           ("network.tcp_throughput_reverse", "Gbit/s", True), ("network.tcp_rtt", "ms", True),
           ("network.icmp_rtt_avg", "ms", True), ("storage.randread_iops", "IOPS", False),
           ("storage.randread_clat_p99", "us", False), ("storage.seqread_bw", "GB/s", False))
SAMPLES_PER_RUN = len(METRICS)
RETESTS_PER_DAY = 4
SAMPLES_BYTES = ("SELECT coalesce(sum(pg_total_relation_size(relid)), 0) "
                 "FROM pg_partition_tree('jobs_sample')")


@dataclass
class Loaded:
    samples: int
    runs: int
    months: int
    seconds: float
    bytes_samples: int

    @property
    def bytes_per_million(self) -> float:
        return self.bytes_samples / (self.samples / 1e6) if self.samples else 0.0


def month_starts(start: datetime, end: datetime) -> list[datetime]:
    """The first instants of the months from ``start``'s through the one after ``end``'s: the
    samples table's months (jobs.services.partitions.Month), as bounds."""
    months, last = [Month.of(start)], Month.of(end).plus(1)
    while months[-1] < last:
        months.append(months[-1].plus(1))
    return [m.start for m in months]


def load(database_url: str, node_ids: list[int], owner: int, samples: int, now: datetime,
         make_months: Callable[[datetime], Any], say: Callable[[str], Any] = print) -> Loaded:
    """``samples`` samples (at least) of re-tests over the year before ``now``, spread evenly
    over ``node_ids`` at RETESTS_PER_DAY: the year's length follows from the count.
    ``make_months(first)``: the platform makes the samples table's months from ``first``'s on
    (`manage.py partitions --since`), as its sweeper would have ahead of each."""
    started = time.monotonic()
    per_node = -(-samples // (SAMPLES_PER_RUN * len(node_ids)))  # re-tests a node, a year
    step = timedelta(days=1) / RETESTS_PER_DAY
    first_due = now - per_node * step
    with psycopg.connect(database_url, autocommit=True) as conn, conn.cursor() as cur:
        cur.execute(SAMPLES_BYTES)
        before = _one(cur)  # the table may hold other sections' samples: counted apart
        cur.execute("SELECT coalesce(max(id), 0) FROM jobs_benchmarkjob")
        job_base = _one(cur) + 1
        cur.execute("SELECT coalesce(max(id), 0) FROM jobs_run")
        run_base = _one(cur) + 1
        cur.execute("SELECT coalesce(max(id), 0) FROM jobs_retest")
        retest_base = _one(cur) + 1
    months = month_starts(first_due, now + step)
    make_months(first_due)
    nodes = len(node_ids)
    with psycopg.connect(database_url, autocommit=False) as conn, conn.cursor() as cur:
        cur.execute("CREATE TEMP TABLE year_nodes (i int PRIMARY KEY, node_id bigint)")
        with cur.copy("COPY year_nodes (i, node_id) FROM STDIN") as copy:
            for i, node_id in enumerate(node_ids):
                copy.write_row((i, node_id))
        conn.commit()
        for lo, hi in zip(months, months[1:], strict=False):
            # The re-tests k (0 .. per_node - 1) due in this month: due = first_due + k x step.
            k_lo = max(0, -(-(lo - first_due) // step))
            k_hi = min(per_node - 1, -(-(hi - first_due) // step) - 1)
            if k_hi < k_lo:
                continue
            cur.execute("SET session_replication_role = replica")
            params = {"k_lo": k_lo, "k_hi": k_hi, "nodes": nodes, "first": first_due,
                      "step": step, "owner": owner, "job_base": job_base, "run_base": run_base,
                      "retest_base": retest_base}
            # Each re-test is number k x nodes + i: its job, run and Retest ids follow it.
            series = ("FROM generate_series(%(k_lo)s::bigint, %(k_hi)s::bigint) k "
                      "CROSS JOIN year_nodes n")
            due = "(%(first)s::timestamptz + k * %(step)s::interval)"
            ident = "(k * %(nodes)s + n.i)"
            cur.execute(f"""INSERT INTO jobs_benchmarkjob (id, suite, params, created_at,
                idempotency_key, request_digest, owner_id, profile, node_count, finished_at)
                SELECT %(job_base)s + {ident}, 'retest', '{{}}', {due}, '', '', %(owner)s,
                'retest', 1, {due} + interval '70 seconds' {series}""", params)
            cur.execute(f"""INSERT INTO jobs_run (id, status, progress, error, attempts,
                queued_at, dispatched_at, started_at, finished_at, inventory, job_id, node_id,
                ranked, requested_by, fault)
                SELECT %(run_base)s + {ident}, 'succeeded', '{{}}', '', 1, {due}, {due},
                {due} + interval '2 seconds', {due} + interval '70 seconds', '{{}}',
                %(job_base)s + {ident}, n.node_id, true, 'platform', '' {series}""", params)
            cur.execute(f"""INSERT INTO jobs_retest (id, due_at, status, reason, deferred,
                settled_at, job_id, node_id)
                SELECT %(retest_base)s + {ident}, {due}, 'done', '', 0,
                {due} + interval '70 seconds', %(job_base)s + {ident}, n.node_id {series}""",
                        params)
            cur.execute(f"""INSERT INTO jobs_sample (run_id, metric, value, unit, n, p5, p95,
                min, max, cv, metadata, created_at, evidence, evidence_source)
                SELECT %(run_base)s + {ident}, m.metric, m.base * (0.9 + random() * 0.2),
                m.unit, 3, m.base * 0.95, m.base * 1.05, m.base * 0.94, m.base * 1.06, 0.02,
                CASE WHEN m.network THEN jsonb_build_object(
                    'peer', 'reference:hangzhou', 'interval', jsonb_build_array(m.base * 0.97,
                    m.base * 1.03), 'precision', 5, 'reference_wait_s', 0.4,
                    'cookies', jsonb_build_array(md5(({ident})::text)))
                ELSE jsonb_build_object('device', 'nvme0n1', 'interval',
                    jsonb_build_array(m.base * 0.97, m.base * 1.03), 'precision', 5,
                    'conditions', jsonb_build_object('steal', 0.0, 'iowait', 0.3)) END,
                {due} + interval '70 seconds',
                CASE WHEN m.network THEN 'platform-verified' ELSE 'host-reported' END,
                CASE WHEN m.network THEN 'reference hangzhou' ELSE '' END
                {series} CROSS JOIN (VALUES {_metric_rows()}) AS m(metric, unit, network, base)
                """, params)
            cur.execute("SET session_replication_role = DEFAULT")
            conn.commit()
            say(f"  {lo:%Y-%m}: re-tests {k_lo}..{k_hi} of {nodes:,} nodes, "
                f"{(k_hi - k_lo + 1) * nodes * SAMPLES_PER_RUN:,} samples")
        for table, column in (("jobs_benchmarkjob", "id"), ("jobs_run", "id"),
                              ("jobs_retest", "id"), ("jobs_sample", "id")):
            cur.execute(sql.SQL("SELECT setval(pg_get_serial_sequence(%s, %s), (SELECT max({}) "
                                "FROM {}))").format(sql.Identifier(column), sql.Identifier(table)),
                        (table, column))
        conn.commit()
        conn.autocommit = True
        cur.execute("VACUUM ANALYZE jobs_run")
        cur.execute("VACUUM ANALYZE jobs_retest")
        cur.execute("VACUUM ANALYZE jobs_sample")
        cur.execute(SAMPLES_BYTES)
        size = _one(cur) - before
    loaded = per_node * nodes
    return Loaded(samples=loaded * SAMPLES_PER_RUN, runs=loaded, months=len(months) - 1,
                  seconds=time.monotonic() - started, bytes_samples=int(size))


def _metric_rows() -> str:
    # Typical figures of a node (the value each re-test varies by +/-10%).
    base = {"Gbit/s": 9.4, "ms": 0.3, "IOPS": 150000.0, "us": 900.0, "GB/s": 2.0}
    return ", ".join(f"('{name}', '{unit}', {str(network).lower()}, {base[unit]})"
                     for name, unit, network in METRICS)


def _one(cur: psycopg.Cursor[Any]) -> Any:
    row = cur.fetchone()
    assert row is not None
    return row[0]
