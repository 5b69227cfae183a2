"""The events a webhook may ask for, and who hears each."""

from __future__ import annotations

# name -> what it tells. Only events the platform sends are accepted at registration: a
# webhook that asks for one never sent would wait for nothing, silently.
EVENTS: dict[str, str] = {
    "job.finished": "every run of one of your jobs has ended (succeeded, failed or cancelled)",
    "certificate.issued": "a node was certified (any node: certificates are public)",
    "certificate.revoked": "a certificate was revoked, with the reason (any node)",
    "certificate.expiring": "a certificate entered its renewal window (any node), once",
    "node.figures_changed": "a ranked run of a node you watch moved one of its figures",
}

# Events about the caller's own things go to the caller's webhooks only; the others are
# public facts (the certificate pages are public) and go to every webhook that asks.
OWN = {"job.finished"}
# Events about one node go to the webhooks that watch it (Webhook.nodes) and ask for them.
WATCHED = {"node.figures_changed"}
# Sent to one webhook when its owner asks (POST .../ping), never registered for: how a buyer
# checks a receiver and its signature check before an event comes.
PING = "ping"
