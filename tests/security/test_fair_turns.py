"""#30: reference turns cannot be starved. A host with a hundred queued runs claimed them all by
hand, and each running run took its own place in the reference's queue: the host queued
itself about a day ahead of everyone. A node now runs one run at a time."""

from __future__ import annotations

import uuid
from typing import Any

from jobs.models import ReferenceQueue, Run
from jobs.services import lifecycle, submission


def test_a_host_claiming_all_its_queued_runs_gets_one_and_one_queue_place(
        buyer: Any, enrol_node: Any, reference_endpoint: Any) -> None:
    greedy, honest = enrol_node("hz-greedy"), enrol_node("hz-honest")
    jobs = [submission.submit(buyer.user, [greedy.node.pk], "network", profile="quick")[0]
            for _ in range(5)]
    runs = [job.runs.get() for job in jobs]
    answers = [greedy.client().post(f"/api/v1/node/runs/{run.pk}/claim") for run in runs]

    assert [a.status_code for a in answers] == [200, 409, 409, 409, 409]
    busy = answers[1].json()
    assert busy["code"] == "node_busy" and busy["retry_after"] > 0
    assert f"this node is running run {runs[0].pk}" in busy["detail"]
    assert Run.objects.filter(node=greedy.node, status="running").count() == 1

    # Each claimed run would ask for the reference: one running run is one place in line.
    first = answers[0].json()
    for run in runs:
        greedy.client().post(f"/api/v1/node/runs/{run.pk}/reference-slot", {
            "attempt_id": first["attempt_id"], "peer": "reference:hangzhou:ref1", "seconds": 22},
            format="json")
    assert ReferenceQueue.objects.filter(run__node=greedy.node).count() == 0  # it holds the turn
    own, _ = submission.submit(buyer.user, [honest.node.pk], "network", profile="quick")
    claim = lifecycle.claim(honest.node, own.runs.get().pk)
    honest.client().post(f"/api/v1/node/runs/{claim.run.pk}/reference-slot", {
        "attempt_id": str(claim.attempt.id), "peer": "reference:hangzhou:ref1", "seconds": 22},
        format="json")
    assert list(ReferenceQueue.objects.values_list("run__node__name", flat=True)) == ["hz-honest"]

    # Once its run is in, the host claims the next one.
    lifecycle.finish(greedy.node, runs[0].pk, uuid.UUID(first["attempt_id"]), False, [], "done", {})
    assert greedy.client().post(f"/api/v1/node/runs/{runs[1].pk}/claim").status_code == 200
