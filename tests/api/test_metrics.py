"""/metrics: Prometheus text with runs by state, queue depth per node and rejections."""

from __future__ import annotations

from typing import Any

from django.test import Client

from jobs.services import submission


def test_metrics_count_runs_queue_depth_and_rejections(buyer: Any, enrol_node: Any,
                                                       django_capture_on_commit_callbacks: Any) -> None:
    one = enrol_node("hz-1")
    with django_capture_on_commit_callbacks(execute=True):
        for _ in range(3):
            submission.submit(buyer.user, [one.node.pk], "noop")
    run = one.node.runs.first()
    before = rejected(Client().get("/metrics").content.decode())
    one.client().post(f"/api/v1/node/runs/{run.pk}/result", {"attempt_id": "x"}, format="json")
    text = Client().get("/metrics").content.decode()
    assert 'bench_runs{state="queued"} 3' in text
    assert 'bench_node_queue_depth{node="hz-1"} 3' in text
    assert rejected(text) == before + 1


def rejected(text: str) -> int:
    for line in text.splitlines():
        if line.startswith('bench_results_rejected_total{reason="invalid"}'):
            return int(line.split()[-1])
    return 0
