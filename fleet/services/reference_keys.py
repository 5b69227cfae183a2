"""The key a reference's agent hands in its servers' records with (`Reference <key>`).

A reference is the platform's own machine in its region, not a host: its key is issued by
the platform's operator (`manage.py reference_endpoint ... --key-file`), shown once and
stored as a digest, and it authenticates nothing but the reference's records.
"""

from __future__ import annotations

from fleet.models import ReferenceEndpoint
from fleet.services import secrets

PREFIX = "rk_"


def issue(endpoint: ReferenceEndpoint) -> str:
    """A new key for the endpoint's agent; the one it replaces stops working."""
    key = f"{PREFIX}{endpoint.pk}.{secrets.new_secret()}"
    ReferenceEndpoint.objects.filter(pk=endpoint.pk).update(key_digest=secrets.digest(key))
    endpoint.key_digest = secrets.digest(key)
    return key


def endpoint_for(key: str) -> ReferenceEndpoint | None:
    """The endpoint whose agent holds this key; None for any other string."""
    if not key.startswith(PREFIX) or "." not in key:
        return None
    pk = key[len(PREFIX):].split(".", 1)[0]
    if not pk.isdigit() or len(pk) > 12:
        return None
    endpoint = ReferenceEndpoint.objects.filter(pk=int(pk)).select_related("region").first()
    if endpoint is None or not endpoint.key_digest or not secrets.matches(key, endpoint.key_digest):
        return None
    return endpoint
