"""POST/GET/PATCH/DELETE /api/v1/webhooks, POST .../ID/ping and .../ID/secret, and
GET /api/v1/webhooks/ID/deliveries."""

from __future__ import annotations

from typing import Any

import pytest

from hooks.models import Delivery, Webhook
from hooks.services import delivery
from tests.fixtures.webhooks import Receiver
from tests.hooks.test_signature import documented_verify


def post(actor: Any, url: str, events: list[str] | None = None) -> Any:
    return actor.client().post("/api/v1/webhooks", {
        "url": url, "events": ["job.finished"] if events is None else events}, format="json")


def test_a_buyer_registers_a_webhook_and_gets_its_secret_once(
        buyer: Any, receiver: Receiver) -> None:
    response = post(buyer, receiver.url, ["job.finished", "certificate.issued"])
    assert response.status_code == 201
    created = response.json()
    assert created["secret"].startswith("whsec_")
    assert created["events"] == ["certificate.issued", "job.finished"]
    listed = buyer.client().get("/api/v1/webhooks").json()["results"]
    assert [w["id"] for w in listed] == [created["id"]]
    assert "secret" not in listed[0]


def test_an_unknown_event_is_refused_with_the_list_of_events(buyer: Any, receiver: Receiver) -> None:
    response = post(buyer, receiver.url, ["node.exploded"])
    assert response.status_code == 400
    assert response.json()["errors"] == {"events": "unknown event 'node.exploded'; the events "
                                         "are job.finished, certificate.issued, certificate.revoked, "
                                         "certificate.expiring, node.figures_changed"}
    assert post(buyer, receiver.url, []).status_code == 400


@pytest.mark.parametrize("url", ["ftp://93.184.215.14/", "not a url", "http:///nohost"])
def test_a_url_that_is_not_http_is_refused(buyer: Any, url: str) -> None:
    response = post(buyer, url)
    assert response.status_code == 400
    assert "url" in response.json()["errors"]


@pytest.mark.parametrize("address", ["127.0.0.1", "169.254.169.254", "10.0.0.5", "192.168.0.9"])
def test_in_production_an_address_inside_a_network_is_refused(
        buyer: Any, settings: Any, address: str) -> None:
    settings.WEBHOOK_ALLOW_PRIVATE_TARGETS, settings.WEBHOOK_REQUIRE_HTTPS = False, True
    response = post(buyer, f"https://{address}/hook")
    assert response.status_code == 400
    assert response.json()["errors"]["url"].startswith(f"{address} resolves to {address} is ")
    assert not Webhook.objects.exists()


def test_a_buyer_has_at_most_webhook_max_per_user(
        buyer: Any, receiver: Receiver, settings: Any) -> None:
    settings.WEBHOOK_MAX_PER_USER = 2
    assert [post(buyer, receiver.url).status_code for _ in range(3)] == [201, 201, 409]


def test_another_buyers_webhook_and_its_log_answer_404(
        buyer: Any, other_buyer: Any, receiver: Receiver) -> None:
    hook = post(buyer, receiver.url).json()
    Delivery.objects.create(webhook_id=hook["id"], event="job.finished", subject="job:1",
                            payload={"event": "job.finished", "data": {"job": 1}},
                            next_attempt_at="2030-01-01T00:00:00Z")
    other = other_buyer.client()
    assert other.get(f"/api/v1/webhooks/{hook['id']}/deliveries").status_code == 404
    assert other.delete(f"/api/v1/webhooks/{hook['id']}").status_code == 404
    assert other.get("/api/v1/webhooks").json()["results"] == []
    mine = buyer.client().get(f"/api/v1/webhooks/{hook['id']}/deliveries").json()["results"]
    assert [d["event"] for d in mine] == ["job.finished"]


def test_a_buyer_deletes_its_webhook_and_its_log(buyer: Any, receiver: Receiver) -> None:
    hook = post(buyer, receiver.url).json()
    assert buyer.client().delete(f"/api/v1/webhooks/{hook['id']}").status_code == 204
    assert buyer.client().get(f"/api/v1/webhooks/{hook['id']}/deliveries").status_code == 404
    assert not Webhook.objects.exists()


def test_webhooks_need_a_token(db: Any) -> None:
    from rest_framework.test import APIClient

    assert APIClient().get("/api/v1/webhooks").status_code == 401


def test_a_ping_is_sent_to_that_webhook_only_signed_as_any_event(
        buyer: Any, receiver: Receiver) -> None:
    hook = post(buyer, receiver.url).json()
    post(buyer, receiver.url)  # another of the buyer's webhooks: not pinged
    response = buyer.client().post(f"/api/v1/webhooks/{hook['id']}/ping")
    assert response.status_code == 202
    assert (response.json()["event"], response.json()["status"]) == ("ping", "pending")
    sent = Delivery.objects.get()
    assert sent.webhook_id == hook["id"]
    assert delivery.attempt(sent.pk) == "delivered"
    [got] = receiver.received
    assert got.headers["X-Bench-Event"] == "ping"
    assert documented_verify()(hook["secret"], got.body, got.headers["X-Bench-Signature"])
    # Each ping is its own delivery: a buyer tries again after fixing the receiver.
    assert buyer.client().post(f"/api/v1/webhooks/{hook['id']}/ping").status_code == 202
    assert Delivery.objects.count() == 2


def test_pings_are_throttled_per_user(buyer: Any, receiver: Receiver) -> None:
    from rest_framework.throttling import ScopedRateThrottle

    allowed = int(ScopedRateThrottle.THROTTLE_RATES["webhook-ping"].split("/")[0])
    hook = post(buyer, receiver.url).json()
    client = buyer.client()
    answers = [client.post(f"/api/v1/webhooks/{hook['id']}/ping").status_code
               for _ in range(allowed + 1)]
    assert answers == [202] * allowed + [429]
    assert Delivery.objects.count() == allowed


def test_a_webhook_that_is_off_is_not_pinged(buyer: Any, receiver: Receiver) -> None:
    hook = post(buyer, receiver.url).json()
    buyer.client().patch(f"/api/v1/webhooks/{hook['id']}", {"active": False}, format="json")
    response = buyer.client().post(f"/api/v1/webhooks/{hook['id']}/ping")
    assert response.status_code == 409 and "switch it on" in response.json()["detail"]
    assert not Delivery.objects.exists()


def test_a_new_secret_signs_every_delivery_from_now_on_a_pending_one_included(
        buyer: Any, receiver: Receiver) -> None:
    hook = post(buyer, receiver.url).json()
    buyer.client().post(f"/api/v1/webhooks/{hook['id']}/ping")  # pending, signed when sent
    response = buyer.client().post(f"/api/v1/webhooks/{hook['id']}/secret")
    assert response.status_code == 200
    new = response.json()["secret"]
    assert new.startswith("whsec_") and new != hook["secret"]
    assert delivery.attempt(Delivery.objects.get().pk) == "delivered"
    [got] = receiver.received
    check = documented_verify()
    assert check(new, got.body, got.headers["X-Bench-Signature"])
    assert not check(hook["secret"], got.body, got.headers["X-Bench-Signature"])
    # Shown this once: the list does not tell it.
    assert "secret" not in buyer.client().get("/api/v1/webhooks").json()["results"][0]


def test_another_buyer_can_neither_ping_nor_rotate_nor_switch_my_webhook(
        buyer: Any, other_buyer: Any, receiver: Receiver) -> None:
    hook = post(buyer, receiver.url).json()
    other = other_buyer.client()
    assert other.post(f"/api/v1/webhooks/{hook['id']}/ping").status_code == 404
    assert other.post(f"/api/v1/webhooks/{hook['id']}/secret").status_code == 404
    assert other.patch(f"/api/v1/webhooks/{hook['id']}", {"active": False},
                       format="json").status_code == 404
    mine = Webhook.objects.get()
    assert (mine.secret, mine.active) == (hook["secret"], True)
    assert not Delivery.objects.exists()


def test_a_webhook_is_switched_on_with_a_boolean_only(buyer: Any, receiver: Receiver) -> None:
    hook = post(buyer, receiver.url).json()
    response = buyer.client().patch(f"/api/v1/webhooks/{hook['id']}", {"active": "perhaps"},
                                    format="json")
    assert response.status_code == 400 and "active" in response.json()["errors"]
    assert buyer.client().patch(f"/api/v1/webhooks/{hook['id']}", {},
                                format="json").status_code == 400
    # Only active changes: a URL in the body is not taken (it was checked at registration).
    changed = buyer.client().patch(f"/api/v1/webhooks/{hook['id']}", {
        "active": False, "url": "http://169.254.169.254/"}, format="json").json()
    assert (changed["active"], changed["url"]) == (False, receiver.url)
    assert buyer.client().put(f"/api/v1/webhooks/{hook['id']}", {"active": True},
                              format="json").status_code == 405
