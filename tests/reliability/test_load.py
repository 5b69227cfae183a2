"""Load: 20 node workers, 1,000 short runs submitted through the API by 8 concurrent clients:
every run succeeds, each exactly once. (`make bench` prints the figures.)"""

from __future__ import annotations

import time
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import pytest
import requests
from django.db.models import Count

from jobs.models import Run, Sample
from lab.procs import wait_for

pytestmark = [pytest.mark.slow, pytest.mark.load]

WORKERS = 20
RUNS = 1000


def test_a_thousand_runs_over_twenty_workers_all_succeed_exactly_once(
        live_server: Any, buyer: Any, enrol_node: Any, worker_factory: Any, settings: Any) -> None:
    settings.NODE_MAX_QUEUED_RUNS = RUNS
    settings.RUN_LEASE_SECONDS = 30
    nodes = [enrol_node(f"n{i:02d}", api_url=live_server.url) for i in range(WORKERS)]
    worker_factory.many([(n.config_path, f"load-{i}") for i, n in enumerate(nodes)], timeout=300)
    ids = [n.node.pk for n in nodes]
    session = requests.Session()
    session.headers.update(buyer.headers)

    def submit(_: int) -> int:
        response = session.post(f"{live_server.url}/api/v1/benchmarks", timeout=60,
                                json={"nodes": ids, "suite": "noop"})
        response.raise_for_status()
        return int(response.json()["id"])

    started = time.monotonic()
    with ThreadPoolExecutor(8) as pool:
        job_ids = list(pool.map(submit, range(RUNS // WORKERS)))
    wait_for(lambda: Run.objects.filter(job_id__in=job_ids, status="succeeded").count() == RUNS,
             600, "1,000 runs to succeed", interval=1)
    elapsed = time.monotonic() - started
    print(f"\n{RUNS} runs over {WORKERS} workers in {elapsed:.1f} s: {RUNS / elapsed:.1f} runs/s")
    runs = Run.objects.filter(job_id__in=job_ids)
    assert runs.count() == RUNS
    assert set(runs.values_list("attempts", flat=True)) == {1}
    per_run = Sample.objects.filter(run__in=runs).values("run").annotate(n=Count("id"))
    assert len(per_run) == RUNS and {row["n"] for row in per_run} == {1}
