"""A node key reaches only that node's runs; results are validated and stored once."""

from __future__ import annotations

from typing import Any

import pytest

from jobs.models import Run, Sample
from jobs.services import submission

GOOD = {"metric": "network.tcp_throughput", "value": 9.4, "unit": "Gbit/s", "n": 3,
        "p5": 9.3, "p95": 9.5, "min": 9.3, "max": 9.5, "cv": 0.01}


@pytest.fixture
def runs(buyer: Any, enrol_node: Any) -> tuple[Any, Any, Run, Run]:
    one, two = enrol_node("hz-1"), enrol_node("hz-2")
    job, _ = submission.submit(buyer.user, [one.node.pk, two.node.pk], "network")
    return one, two, job.runs.get(node=one.node), job.runs.get(node=two.node)


def claim(node: Any, run: Run) -> Any:
    return node.client().post(f"/api/v1/node/runs/{run.pk}/claim")


def post_result(node: Any, run: Run, attempt: str, samples: list[dict[str, Any]],
                status: str = "succeeded") -> Any:
    return node.client().post(f"/api/v1/node/runs/{run.pk}/result",
                              {"attempt_id": attempt, "status": status, "samples": samples},
                              format="json")


def test_a_node_claims_its_own_run_and_gets_the_spec(runs: Any) -> None:
    one, _, run1, _ = runs
    response = claim(one, run1)
    assert response.status_code == 200
    assert response.json()["probes"] == ["network"]
    run1.refresh_from_db()
    assert run1.status == "running" and run1.attempts == 1


def test_another_nodes_run_cannot_be_claimed_progressed_or_given_results(runs: Any) -> None:
    one, two, _, run2 = runs
    attempt = claim(two, run2).json()["attempt_id"]
    assert claim(one, run2).status_code == 404
    progress = one.client().post(f"/api/v1/node/runs/{run2.pk}/progress",
                                 {"attempt_id": attempt, "progress": {"step": 1}}, format="json")
    assert progress.status_code == 404
    assert post_result(one, run2, attempt, [GOOD]).status_code == 404
    assert not Sample.objects.exists()
    run2.refresh_from_db()
    assert run2.status == "running" and run2.progress == {}


def test_user_tokens_cannot_use_node_endpoints(runs: Any, buyer: Any) -> None:
    _, _, run1, _ = runs
    assert buyer.client().post(f"/api/v1/node/runs/{run1.pk}/claim").status_code in (401, 403)


def test_a_result_is_stored_once_per_attempt(runs: Any) -> None:
    one, _, run1, _ = runs
    attempt = claim(one, run1).json()["attempt_id"]
    assert post_result(one, run1, attempt, [GOOD]).json() == {"status": "stored"}
    assert post_result(one, run1, attempt, [GOOD]).json() == {"status": "already stored"}
    assert Sample.objects.count() == 1
    run1.refresh_from_db()
    assert run1.status == "succeeded"


@pytest.mark.parametrize(("sample", "field"), [
    # NaN is not JSON: the parser refuses the body before the serializer sees it.
    ({**GOOD, "value": float("nan")}, "JSON"),
    ({**GOOD, "p95": "fast"}, "p95"),
    ({**GOOD, "value": -1.0}, "value"),
    ({**GOOD, "value": 10_000.0}, "value"),
    ({**GOOD, "unit": "Mbit/s"}, "unit"),
    ({**GOOD, "metric": "network.warp_speed"}, "metric"),
    ({**GOOD, "n": 0}, "n"),
])
def test_implausible_samples_are_a_400_and_nothing_is_stored(runs: Any, sample: dict[str, Any],
                                                            field: str) -> None:
    one, _, run1, _ = runs
    attempt = claim(one, run1).json()["attempt_id"]
    response = one.client().generic(
        "POST", f"/api/v1/node/runs/{run1.pk}/result", content_type="application/json",
        data=_json({"attempt_id": attempt, "status": "succeeded", "samples": [GOOD, sample]}))
    assert response.status_code == 400
    assert field in str(response.json())
    assert not Sample.objects.exists()
    run1.refresh_from_db()
    assert run1.status == "running"


def test_a_body_over_the_limit_is_a_413(runs: Any) -> None:
    one, _, run1, _ = runs
    attempt = claim(one, run1).json()["attempt_id"]
    huge = {"attempt_id": attempt, "status": "failed", "error": "x" * 10_000_000}
    response = one.client().generic("POST", f"/api/v1/node/runs/{run1.pk}/result",
                                    data=_json(huge), content_type="application/json")
    assert response.status_code == 413
    assert not Sample.objects.exists()


def test_a_result_from_a_superseded_attempt_is_a_409(runs: Any, settings: Any) -> None:
    one, _, run1, _ = runs
    settings.RUN_LEASE_SECONDS = 0  # the first lease is over at once
    first = claim(one, run1).json()["attempt_id"]
    settings.RUN_LEASE_SECONDS = 60
    second = claim(one, run1).json()["attempt_id"]
    assert first != second
    late = post_result(one, run1, first, [GOOD])
    assert late.status_code == 409
    assert "no longer current" in late.json()["detail"]
    assert not Sample.objects.exists()


def _json(body: dict[str, Any]) -> str:
    import json

    return json.dumps(body)


def test_throughput_beyond_the_nic_seen_at_enrolment_is_refused(buyer: Any, enrol_node: Any) -> None:
    slow = enrol_node("hz-1g", inventory={"nics": [{"name": "eth0", "speed_mbps": 1000}]})

    def post(sample: dict[str, Any], inventory: dict[str, Any]) -> Any:
        job, _ = submission.submit(buyer.user, [slow.node.pk], "network")
        run = job.runs.get()
        attempt = claim(slow, run).json()["attempt_id"]
        return slow.client().post(f"/api/v1/node/runs/{run.pk}/result", {
            "attempt_id": attempt, "status": "succeeded", "samples": [sample],
            "inventory": inventory}, format="json")

    remote = {**GOOD, "value": 50.0, "p5": 49.0, "p95": 51.0, "min": 49.0, "max": 52.0,
              "metadata": {"peer": "node:elsewhere", "peer_host": "10.20.0.2"}}
    # A result that claims a 100 GbE NIC does not raise the ceiling seen at enrolment.
    response = post(remote, {"nics": [{"name": "eth0", "speed_mbps": 100_000}]})
    assert response.status_code == 422
    assert "fastest NIC" in response.json()["errors"]["within_nic_rate"]
    assert not Sample.objects.exists()
    # Declaring a loopback peer_host does not exempt it: the platform resolves peers itself.
    assert post(remote | {"metadata": {"peer_host": "127.0.0.1"}}, {}).status_code == 422
    within = {**remote, "value": 0.94, "p5": 0.93, "p95": 0.95, "min": 0.93, "max": 0.96}
    assert post(within, {}).status_code == 200
