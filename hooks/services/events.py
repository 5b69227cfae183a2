"""The events a webhook may ask for, and who hears each."""

from __future__ import annotations

# name -> what it tells. Only events the platform sends are accepted at registration: a
# webhook that asks for one never sent would wait for nothing, silently.
EVENTS: dict[str, str] = {
    "job.finished": "every run of one of your jobs has ended (succeeded, failed or cancelled)",
    "certificate.issued": "a node was certified (any node: certificates are public)",
    "certificate.revoked": "a certificate was revoked, with the reason (any node)",
}

# Events about the caller's own things go to the caller's webhooks only; the others are
# public facts (the certificate pages are public) and go to every webhook that asks.
OWN = {"job.finished"}
