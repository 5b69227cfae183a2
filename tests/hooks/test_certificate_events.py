"""A certificate issued is told to the webhooks that ask, written with the certificate; one
about to expire, once, from the renewal sweep."""

from __future__ import annotations

import json
from datetime import timedelta
from typing import Any

from django.utils import timezone

from certification.models import Certificate
from certification.services import issuing
from hooks.models import Delivery
from hooks.services import delivery
from tests.certification.test_certification import GOOD, certify
from tests.certification.test_certification import signing_key as signing_key  # noqa: F401
from tests.fixtures import measured, trial_agent
from tests.fixtures.webhooks import Receiver
from tests.hooks.test_delivery import register


def test_a_certificate_issued_is_delivered_to_every_webhook_that_asks(
        provider_owner: Any, buyer: Any, other_buyer: Any, enrol_node: Any,
        reference_endpoint: Any, receiver: Receiver,
        django_capture_on_commit_callbacks: Any) -> None:
    register(buyer, receiver.url, ["certificate.issued"])
    register(other_buyer, receiver.url, ["job.finished"])  # did not ask for certificates
    node = enrol_node("hz-1")
    measured(buyer, trial_agent(buyer, node), 9.0, "quick", {m: v for m, (v, _) in GOOD.items()})
    cert = certify(provider_owner, node, GOOD, django_capture_on_commit_callbacks).certificate
    assert cert is not None

    sent = Delivery.objects.get(event="certificate.issued")
    assert delivery.attempt(sent.pk) == "delivered"
    data = json.loads(receiver.received[0].body)["data"]
    assert (data["certificate"], data["node"], data["tier"]) == (cert.pk, node.node.pk, "partial")
    assert data["url"].endswith(f"/api/v1/certificates/{cert.pk}")
    assert not Delivery.objects.filter(webhook__owner=other_buyer.user).exists()


def test_a_certificate_entering_its_renewal_window_is_told_once_to_every_webhook_that_asks(
        buyer: Any, other_buyer: Any, enrol_node: Any, receiver: Receiver,
        settings: Any) -> None:
    register(buyer, receiver.url, ["certificate.expiring"])
    register(other_buyer, receiver.url, ["certificate.issued"])  # did not ask for it
    node = enrol_node("hz-1").node
    now = timezone.now()

    def cert(expires_in: timedelta, revoked: bool = False) -> Certificate:
        return Certificate.objects.create(
            node=node, profile="training-ready", tier="gold", document={}, signature="",
            issued_at=now - timedelta(days=25), expires_at=now + expires_in,
            revoked_at=now if revoked else None)

    window = timedelta(days=settings.CERT_RENEW_DAYS_BEFORE)
    due = cert(window - timedelta(hours=1))
    cert(window + timedelta(hours=1))  # not yet in the window
    cert(window - timedelta(hours=1), revoked=True)  # revoked: told already, as revoked
    cert(-timedelta(hours=1))  # expired

    # No owner to re-run it for: the webhooks are told all the same, at every sweep once.
    for _ in range(2):
        assert issuing.renew_due(lambda node: None) == 0
    sent = Delivery.objects.get()
    assert (sent.event, sent.subject, sent.webhook.owner) == (
        "certificate.expiring", f"certificate:{due.pk}", buyer.user)
    assert delivery.attempt(sent.pk) == "delivered"
    body = json.loads(receiver.received[0].body)
    assert body["event"] == "certificate.expiring"
    assert body["data"]["certificate"] == due.pk
    assert body["data"]["expires_at"] == due.expires_at.isoformat()
    assert body["data"]["renew_days_before"] == settings.CERT_RENEW_DAYS_BEFORE
