"""What certification tells buyers' webhooks (hooks' outbox): a certificate was issued,
revoked, or entered its renewal window. Issued and revoked are called inside the transaction
that issues or revokes it, so the delivery is written with it or not at all; expiring from
the renewal sweep, at every pass (the outbox keeps one delivery per certificate).
Certificates are public (GET /api/v1/certificates/ID): every webhook that asks hears of
every node's."""

from __future__ import annotations

from django.conf import settings

from certification.models import Certificate
from hooks.services import outbox


def summary(cert: Certificate) -> dict[str, object]:
    return {"certificate": cert.pk, "node": cert.node_id, "profile": cert.profile,
            "profile_version": cert.profile_version, "tier": cert.tier,
            "issued_at": cert.issued_at.isoformat(), "expires_at": cert.expires_at.isoformat(),
            "url": f"{settings.PUBLIC_API_URL}/api/v1/certificates/{cert.pk}"}


def issued(cert: Certificate) -> None:
    outbox.emit("certificate.issued", f"certificate:{cert.pk}", summary(cert))


def revoked(certs: list[Certificate]) -> None:
    for cert in certs:
        outbox.emit("certificate.revoked", f"certificate:{cert.pk}", {
            **summary(cert), "revoked_at": cert.revoked_at.isoformat() if cert.revoked_at else None,
            "reason": cert.revoked_reason})


def expiring(cert: Certificate) -> None:
    """Within CERT_RENEW_DAYS_BEFORE of its expiry: the platform asks for the re-run now, and
    a certificate.issued follows when the node passes it again."""
    outbox.emit("certificate.expiring", f"certificate:{cert.pk}", {
        **summary(cert), "renew_days_before": settings.CERT_RENEW_DAYS_BEFORE})
