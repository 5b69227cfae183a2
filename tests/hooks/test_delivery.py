"""Deliveries to a real HTTP receiver on loopback: signed, retried with backoff, logged,
and written with the event they tell of (hooks.services.outbox, .delivery)."""

from __future__ import annotations

import json
from datetime import timedelta
from typing import Any

import pytest
from django.db import transaction
from django.utils import timezone

from certification.models import Certificate
from certification.services import issuing
from hooks.models import Delivery, Webhook
from hooks.services import delivery, outbox
from jobs.services import lifecycle, submission
from tests.fixtures.webhooks import Receiver
from tests.hooks.test_signature import documented_verify


def register(actor: Any, url: str, events: list[str]) -> dict[str, Any]:
    response = actor.client().post("/api/v1/webhooks", {"url": url, "events": events},
                                   format="json")
    assert response.status_code == 201, response.json()
    return response.json()


def finish_a_job(buyer: Any, enrolled: Any, capture: Any) -> int:
    with capture(execute=True):  # the after-commit work: job_finished, then the outbox
        job, _ = submission.submit(buyer.user, [enrolled.node.pk], "network")
        run = job.runs.get()
        claim = lifecycle.claim(enrolled.node, run.pk)
        lifecycle.finish(enrolled.node, run.pk, claim.attempt.id, False, [], "iperf3 died", {})
    return job.pk


def test_a_finished_job_is_delivered_to_a_real_receiver_and_its_signature_checks(
        buyer: Any, enrol_node: Any, receiver: Receiver,
        django_capture_on_commit_callbacks: Any) -> None:
    hook = register(buyer, receiver.url, ["job.finished"])
    job_id = finish_a_job(buyer, enrol_node("hz-1"), django_capture_on_commit_callbacks)

    sent = Delivery.objects.get()
    assert delivery.attempt(sent.pk) == "delivered"

    [got] = receiver.received
    assert got.path == "/hook?source=bench"
    assert got.headers["X-Bench-Event"] == "job.finished"
    assert got.headers["X-Bench-Delivery"] == str(sent.pk)
    assert documented_verify()(hook["secret"], got.body, got.headers["X-Bench-Signature"])
    body = json.loads(got.body)
    assert (body["id"], body["event"]) == (sent.pk, "job.finished")
    assert body["data"]["job"] == job_id and body["data"]["status"] == "failed"
    assert body["data"]["runs"][0]["error"] == "iperf3 died"


def test_a_failed_delivery_is_retried_after_its_backoff_and_the_buyer_reads_the_log(
        buyer: Any, enrol_node: Any, receiver: Receiver,
        django_capture_on_commit_callbacks: Any) -> None:
    receiver.answers = [500, 200]
    hook = register(buyer, receiver.url, ["job.finished"])
    finish_a_job(buyer, enrol_node("hz-1"), django_capture_on_commit_callbacks)
    sent = Delivery.objects.get()

    assert delivery.attempt(sent.pk) == "pending"
    sent.refresh_from_db()
    assert sent.attempts == 1 and sent.last_status_code == 500
    assert sent.last_error == "HTTP 500: receiver down for maintenance"
    # Not before its backoff: the first retry waits FIRST_RETRY_S.
    assert delivery.attempt(sent.pk) is None
    assert delivery.due(sent.next_attempt_at - timedelta(seconds=1)) == []
    later = sent.next_attempt_at + timedelta(seconds=1)
    assert delivery.due(later) == [sent.pk]  # the sweeper hands it to a worker
    assert delivery.attempt(sent.pk, now=later) == "delivered"
    assert len(receiver.received) == 2
    # The same delivery id both times: a receiver can drop a repeat.
    assert {r.headers["X-Bench-Delivery"] for r in receiver.received} == {str(sent.pk)}

    log = buyer.client().get(f"/api/v1/webhooks/{hook['id']}/deliveries").json()["results"]
    assert [(d["status"], d["attempts"], d["last_status_code"]) for d in log] == [
        ("delivered", 2, 200)]
    assert [a["status_code"] for a in log[0]["history"]] == [500, 200]


def test_a_delivery_whose_message_was_lost_is_handed_to_a_worker_again(
        buyer: Any, enrol_node: Any, receiver: Receiver,
        django_capture_on_commit_callbacks: Any) -> None:
    # Redis lost the message, or no worker was up: the row is the record, the sweeper asks
    # again once nobody took it for REQUEUE_AFTER_S.
    register(buyer, receiver.url, ["job.finished"])
    finish_a_job(buyer, enrol_node("hz-1"), django_capture_on_commit_callbacks)
    sent = Delivery.objects.get()
    assert delivery.due(timezone.now()) == []  # just handed to a worker
    later = timezone.now() + timedelta(seconds=delivery.REQUEUE_AFTER_S + 1)
    assert delivery.due(later) == [sent.pk]
    assert delivery.due(later) == []  # asked once per REQUEUE_AFTER_S
    assert delivery.attempt(sent.pk, now=later) == "delivered"


def test_the_backoff_grows_fourfold_up_to_its_cap_and_gives_up_after_the_last_attempt() -> None:
    delays = [delivery.retry_delay(n) for n in range(1, delivery.MAX_ATTEMPTS)]
    assert delays[:5] == [30, 120, 480, 1920, 7680]
    assert max(delays) == delivery.MAX_DELAY_S
    assert sum(delays) < 24 * 3600  # within the day of the event


def test_a_receiver_that_never_answers_2xx_ends_failed(
        buyer: Any, enrol_node: Any, receiver: Receiver,
        django_capture_on_commit_callbacks: Any) -> None:
    receiver.answers = [503]
    register(buyer, receiver.url, ["job.finished"])
    finish_a_job(buyer, enrol_node("hz-1"), django_capture_on_commit_callbacks)
    sent = Delivery.objects.get()
    for _ in range(delivery.MAX_ATTEMPTS):
        sent.refresh_from_db()
        assert delivery.attempt(sent.pk, now=sent.next_attempt_at) is not None
    sent.refresh_from_db()
    assert (sent.status, sent.attempts) == ("failed", delivery.MAX_ATTEMPTS)
    assert delivery.attempt(sent.pk, now=sent.next_attempt_at + timedelta(days=1)) is None
    assert len(receiver.received) == delivery.MAX_ATTEMPTS


def test_an_address_refused_at_delivery_time_is_not_dialled(
        buyer: Any, enrol_node: Any, receiver: Receiver, settings: Any,
        django_capture_on_commit_callbacks: Any) -> None:
    # Registered while loopback was allowed; what the name gives now is checked again
    # (a name that resolves elsewhere later: DNS rebinding).
    register(buyer, receiver.url, ["job.finished"])
    finish_a_job(buyer, enrol_node("hz-1"), django_capture_on_commit_callbacks)
    settings.WEBHOOK_ALLOW_PRIVATE_TARGETS = False
    sent = Delivery.objects.get()
    assert delivery.attempt(sent.pk) == "pending"
    sent.refresh_from_db()
    assert sent.last_error.startswith("refused: 127.0.0.1 resolves to")
    assert receiver.received == []


def test_a_job_reported_finished_twice_is_delivered_once(
        buyer: Any, enrol_node: Any, receiver: Receiver,
        django_capture_on_commit_callbacks: Any) -> None:
    register(buyer, receiver.url, ["job.finished"])
    job_id = finish_a_job(buyer, enrol_node("hz-1"), django_capture_on_commit_callbacks)
    with django_capture_on_commit_callbacks(execute=True):
        lifecycle.settle([job_id])  # two runs of a job ending together both report it
    assert Delivery.objects.count() == 1


def test_another_buyers_job_is_not_told_to_my_webhook(
        buyer: Any, other_buyer: Any, enrol_node: Any, receiver: Receiver,
        django_capture_on_commit_callbacks: Any) -> None:
    register(other_buyer, receiver.url, ["job.finished"])
    finish_a_job(buyer, enrol_node("hz-1"), django_capture_on_commit_callbacks)
    assert not Delivery.objects.exists()


@pytest.fixture
def certificate(enrol_node: Any) -> Certificate:
    issued = timezone.now()
    return Certificate.objects.create(
        node=enrol_node("hz-1").node, profile="training-ready", tier="gold", document={},
        signature="", issued_at=issued, expires_at=issued + timedelta(days=30))


def test_a_revocation_is_written_with_its_delivery_or_not_at_all(
        buyer: Any, receiver: Receiver, certificate: Certificate) -> None:
    register(buyer, receiver.url, ["certificate.revoked"])
    with pytest.raises(RuntimeError), transaction.atomic():
        issuing.revoke(certificate, "a test that rolls back")
        raise RuntimeError
    assert not Delivery.objects.exists()

    issuing.revoke(certificate, "re-run failed")
    sent = Delivery.objects.get()
    assert sent.payload["data"]["certificate"] == certificate.pk
    assert sent.payload["data"]["reason"] == "re-run failed"
    assert delivery.attempt(sent.pk) == "delivered"
    assert json.loads(receiver.received[0].body)["event"] == "certificate.revoked"


def test_the_log_keeps_a_month_of_finished_deliveries_and_every_pending_one(
        buyer: Any, receiver: Receiver, settings: Any) -> None:
    hook = register(buyer, receiver.url, ["job.finished"])
    now = timezone.now()
    old = now - timedelta(days=settings.WEBHOOK_LOG_KEEP_DAYS + 1)

    def row(subject: str, status: str, at: Any) -> None:
        Delivery.objects.filter(pk=Delivery.objects.create(
            webhook_id=hook["id"], event="job.finished", subject=subject, payload={},
            status=status, next_attempt_at=at, delivered_at=at if status == "delivered" else None,
        ).pk).update(created_at=at)

    row("job:1", "delivered", old)
    row("job:2", "failed", old)
    row("job:3", "pending", old)
    row("job:4", "delivered", now)
    assert delivery.prune(now) == 2
    assert sorted(Delivery.objects.values_list("subject", flat=True)) == ["job:3", "job:4"]


def failing(hook_id: int, subject: str) -> int:
    """A delivery on its last attempt (the earlier ones spent, as a receiver down for a day
    leaves it)."""
    return Delivery.objects.create(
        webhook_id=hook_id, event="job.finished", subject=subject,
        payload={"event": "job.finished", "data": {}}, next_attempt_at=timezone.now(),
        attempts=delivery.MAX_ATTEMPTS - 1).pk


def test_a_webhook_whose_deliveries_keep_failing_is_turned_off_and_its_owner_turns_it_on(
        buyer: Any, receiver: Receiver) -> None:
    receiver.answers = [503]
    hook = register(buyer, receiver.url, ["job.finished"])
    n = delivery.DISABLE_AFTER_FAILED
    for i in range(n - 1):
        assert delivery.attempt(failing(hook["id"], f"job:{i}")) == "failed"
    listed = buyer.client().get("/api/v1/webhooks").json()["results"][0]
    assert (listed["active"], listed["disabled_reason"]) == (True, "")

    assert delivery.attempt(failing(hook["id"], "job:last")) == "failed"
    listed = buyer.client().get("/api/v1/webhooks").json()["results"][0]
    assert listed["active"] is False and listed["disabled_at"] is not None
    assert listed["disabled_reason"].startswith(
        f"turned off: the last {n} deliveries each failed {delivery.MAX_ATTEMPTS} attempts")
    assert "HTTP 503" in listed["disabled_reason"]
    # Off: nothing new is queued for it, and what is pending waits.
    assert outbox.emit("job.finished", "job:99", {}, owner=buyer.user) == 0
    waiting = failing(hook["id"], "job:waiting")
    assert delivery.attempt(waiting) is None

    receiver.answers = [200]
    response = buyer.client().patch(f"/api/v1/webhooks/{hook['id']}", {"active": True},
                                    format="json")
    assert response.status_code == 200
    assert (response.json()["active"], response.json()["disabled_reason"],
            response.json()["disabled_at"]) == (True, "", None)
    assert delivery.attempt(waiting) == "delivered"  # what waited is sent once it is on


def test_a_delivery_that_arrives_starts_the_count_of_failures_afresh(
        buyer: Any, receiver: Receiver) -> None:
    hook = register(buyer, receiver.url, ["job.finished"])
    n = delivery.DISABLE_AFTER_FAILED
    receiver.answers = [503]
    for i in range(n - 1):
        delivery.attempt(failing(hook["id"], f"job:{i}"))
    receiver.answers = [200]
    assert delivery.attempt(failing(hook["id"], "job:ok")) == "delivered"
    receiver.answers = [503]
    for i in range(n - 1):
        assert delivery.attempt(failing(hook["id"], f"job:again-{i}")) == "failed"
    assert Webhook.objects.get().active  # never n failed in a row
