"""What a request costs in queries does not grow with the job or the queue: a per-run query
hid in the claim of a multi-node job (half of its time under load, py-spy in make bench)."""

from __future__ import annotations

from typing import Any

from django.db import connection
from django.test.utils import CaptureQueriesContext

from jobs.services import submission


def claim_queries(buyer: Any, nodes: list[Any]) -> int:
    job, _ = submission.submit(buyer.user, [n.node.pk for n in nodes], "noop")
    run = job.runs.get(node=nodes[0].node)
    with CaptureQueriesContext(connection) as queries:
        response = nodes[0].client().post(f"/api/v1/node/runs/{run.pk}/claim")
    assert response.status_code == 200
    assert len(response.json()["mesh"]) == len(nodes)
    return len(queries)


def test_a_claim_costs_the_same_queries_in_a_job_of_2_nodes_or_8(buyer: Any,
                                                                  enrol_node: Any) -> None:
    nodes = [enrol_node(f"hz-{i}") for i in range(10)]
    # Each claiming node is new to the platform (its first request also stamps it seen).
    assert claim_queries(buyer, nodes[:2]) == claim_queries(buyer, nodes[2:])


def test_a_submission_costs_the_same_queries_whatever_the_queue(buyer: Any,
                                                                enrol_node: Any) -> None:
    one = enrol_node("hz-q")

    def submit_queries() -> int:
        with CaptureQueriesContext(connection) as queries:
            response = buyer.client().post("/api/v1/benchmarks",
                                           {"nodes": [one.node.pk], "suite": "noop"},
                                           format="json")
        assert response.status_code == 202
        return len(queries)

    first = submit_queries()
    for _ in range(20):
        submission.submit(buyer.user, [one.node.pk], "noop")
    assert submit_queries() == first
