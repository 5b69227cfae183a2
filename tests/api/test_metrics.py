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
    assert value(text, 'bench_runs{state="queued"}') == 3
    assert value(text, 'bench_node_queue_depth{node="hz-1"}') == 3
    assert rejected(text) == before + 1
    assert "django_http_requests_total_by_method_total" in text  # django-prometheus


def value(text: str, series: str) -> float:
    for line in text.splitlines():
        if line.startswith(series + " "):
            return float(line.split()[-1])
    return 0.0


def rejected(text: str) -> float:
    return value(text, 'bench_results_rejected_total{reason="invalid"}')
