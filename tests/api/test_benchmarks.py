"""Procurement submits, reads and cancels its own benchmark jobs."""

from __future__ import annotations

from typing import Any

from rest_framework.test import APIClient

from jobs.models import BenchmarkJob, Run


def submit(actor: Any, body: dict[str, Any], **headers: str) -> Any:
    return actor.client().post("/api/v1/benchmarks", body, format="json", **headers)


def test_authentication_is_required(db: Any) -> None:
    response = APIClient().post("/api/v1/benchmarks", {"nodes": [1], "suite": "network"},
                                format="json")
    assert response.status_code in (401, 403)
    assert "token" in response.json()["detail"].lower()


def test_a_job_is_accepted_with_one_queued_run_per_node(buyer: Any, enrol_node: Any) -> None:
    one, two = enrol_node("hz-1"), enrol_node("hz-2")
    response = submit(buyer, {"nodes": [one.node.pk, two.node.pk], "suite": "network"})
    assert response.status_code == 202
    body = response.json()
    assert body["url"].endswith(f"/api/v1/benchmarks/{body['id']}")
    assert {r["node"]["id"] for r in body["runs"]} == {one.node.pk, two.node.pk}
    assert {r["status"] for r in body["runs"]} == {"queued"}


def test_unknown_node_ids_are_a_400_and_nothing_is_created(buyer: Any, enrol_node: Any) -> None:
    one = enrol_node("hz-1")
    response = submit(buyer, {"nodes": [one.node.pk, 999999], "suite": "network"})
    assert response.status_code == 400
    assert "999999" in response.json()["errors"]["nodes"]
    assert not BenchmarkJob.objects.exists() and not Run.objects.exists()


def test_invalid_payloads_get_field_messages(buyer: Any, enrol_node: Any) -> None:
    one = enrol_node("hz-1")
    response = submit(buyer, {"nodes": [one.node.pk], "suite": "bogus",
                              "params": {"iperf3_duration": 100000}})
    assert response.status_code == 400
    body = response.json()  # the one error shape docs/api.md documents
    assert set(body) == {"detail", "errors"} and body["detail"].startswith("invalid request: ")
    errors = body["errors"]
    assert "suite" in errors and "params" in errors
    assert "between" in str(errors["params"])


def test_a_client_cannot_see_or_cancel_another_clients_job(buyer: Any, other_buyer: Any,
                                                           enrol_node: Any) -> None:
    one = enrol_node("hz-1")
    job_id = submit(buyer, {"nodes": [one.node.pk], "suite": "noop"}).json()["id"]
    other = other_buyer.client()
    assert other.get(f"/api/v1/benchmarks/{job_id}").status_code == 404
    assert other.post(f"/api/v1/benchmarks/{job_id}/cancel").status_code == 404
    assert other.get("/api/v1/benchmarks").json()["results"] == []
    assert Run.objects.get().status == "queued"


def test_cancel_stops_what_has_not_finished(buyer: Any, enrol_node: Any) -> None:
    one = enrol_node("hz-1")
    job_id = submit(buyer, {"nodes": [one.node.pk], "suite": "noop"}).json()["id"]
    response = buyer.client().post(f"/api/v1/benchmarks/{job_id}/cancel")
    assert response.status_code == 200
    assert response.json()["status"] == "cancelled"
    assert Run.objects.get().status == "cancelled"


def test_the_same_idempotency_key_and_body_return_the_same_job(buyer: Any, enrol_node: Any) -> None:
    one = enrol_node("hz-1")
    body = {"nodes": [one.node.pk], "suite": "noop"}
    first = submit(buyer, body, HTTP_IDEMPOTENCY_KEY="k1")
    second = submit(buyer, body, HTTP_IDEMPOTENCY_KEY="k1")
    assert first.json()["id"] == second.json()["id"]
    assert BenchmarkJob.objects.count() == 1
    conflict = submit(buyer, {**body, "suite": "network"}, HTTP_IDEMPOTENCY_KEY="k1")
    assert conflict.status_code == 409


def test_a_node_key_is_not_a_user_token(buyer: Any, enrol_node: Any) -> None:
    one = enrol_node("hz-1")
    response = one.client().post("/api/v1/benchmarks", {"nodes": [one.node.pk], "suite": "noop"},
                                 format="json")
    assert response.status_code in (401, 403)
