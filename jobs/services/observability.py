"""The platform's own Prometheus metrics (beside django-prometheus' request metrics at
/metrics), and the rejection counters.

Read from the database and Redis at scrape time by a collector, so every web worker reports
the same figures; the rejection counters live in Redis for the same reason.
"""

from __future__ import annotations

import logging
from collections.abc import Iterable
from datetime import timedelta
from typing import Any

import redis
from django.conf import settings
from django.db.models import Count, F, Sum
from django.utils import timezone

from fleet.models import Node
from fleet.services.broker import admin_client, key_prefix
from jobs.models import Run

log = logging.getLogger(__name__)
REJECTED_KEY = "platform:metrics:results_rejected"


def count_rejection(reason: str) -> None:
    try:
        admin_client().hincrby(REJECTED_KEY, reason, 1)
    except redis.RedisError as exc:
        log.warning("could not count a rejected result (%s): %s", reason, exc)


def _text(value: bytes | str) -> str:
    return value.decode() if isinstance(value, bytes) else value


def _line(name: str, value: float, **labels: object) -> str:
    if labels:
        inner = ",".join(f'{k}="{str(v).replace(chr(34), "")}"' for k, v in labels.items())
        return f"{name}{{{inner}}} {value}"
    return f"{name} {value}"


class PlatformCollector:
    """A prometheus_client collector: the figures of render(), parsed into metric families."""

    def collect(self) -> Iterable[Any]:
        from prometheus_client.parser import text_string_to_metric_families

        yield from text_string_to_metric_families(render())

    def describe(self) -> list[Any]:
        return []  # collected at scrape time only (it reads the database)


def render() -> str:
    lines: list[str] = []

    def block(name: str, kind: str, help_text: str, rows: Iterable[str]) -> None:
        lines.extend([f"# HELP {name} {help_text}", f"# TYPE {name} {kind}", *rows])

    states = dict(Run.objects.values_list("status").annotate(n=Count("id")))
    block("bench_runs", "gauge", "Runs by state.",
          [_line("bench_runs", states.get(s, 0), state=s) for s in Run.Status.values])
    finished = Run.objects.filter(status=Run.Status.SUCCEEDED, started_at__isnull=False,
                                  finished_at__gte=timezone.now() - timedelta(hours=1))
    durations = finished.aggregate(n=Count("id"), total=Sum(F("finished_at") - F("started_at")))
    total = durations["total"].total_seconds() if durations["total"] else 0.0
    block("bench_run_duration_seconds", "summary", "Succeeded runs of the last hour.",
          [_line("bench_run_duration_seconds_count", durations["n"]),
           _line("bench_run_duration_seconds_sum", total)])
    depths = []
    nodes = list(Node.objects.filter(status=Node.Status.ACTIVE).values_list("pk", "name"))
    try:
        # One pipelined round trip for every node's queue, not one per node per scrape.
        pipe = admin_client().pipeline(transaction=False)
        for node_id, _ in nodes:
            pipe.llen(f"{key_prefix(node_id)}{settings.NODE_QUEUE}")
        pipe.hgetall(REJECTED_KEY)
        *lengths, rejected = pipe.execute()
        depths = [_line("bench_node_queue_depth", n, node=name)
                  for (_, name), n in zip(nodes, lengths, strict=True)]
    except redis.RedisError:
        rejected = {}
    block("bench_node_queue_depth", "gauge", "Messages waiting in each node's queue.", depths)
    block("bench_results_rejected_total", "counter", "Results refused, by reason.",
          [_line("bench_results_rejected_total", int(v), reason=_text(k)) for k, v in rejected.items()])
    suspended = Node.objects.exclude(broker_suspended_reason="").values_list("name", flat=True)
    block("bench_node_broker_suspended", "gauge",
          "Nodes whose broker user the sweeper switched off (over their budget).",
          [_line("bench_node_broker_suspended", 1, node=name) for name in suspended])
    seen = timezone.now() - timedelta(seconds=settings.NODE_OFFLINE_AFTER_SECONDS)
    online = Node.objects.filter(status=Node.Status.ACTIVE, last_seen_at__gte=seen).count()
    block("bench_nodes_online", "gauge", "Active nodes that heartbeated recently.",
          [_line("bench_nodes_online", online)])
    return "\n".join(lines) + "\n"
