"""A certificate issued is told to the webhooks that ask, written with the certificate."""

from __future__ import annotations

import json
from typing import Any

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
