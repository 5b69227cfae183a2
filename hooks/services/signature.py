"""The signature on every delivery, Stripe's scheme: ``X-Bench-Signature: t=<unix>,v1=<hex>``
with v1 = HMAC-SHA256(secret, "<t>.<body>"). The timestamp is signed with the body, so a
recorded delivery replayed later fails the receiver's time window.

Pure functions and no Django: docs/api.md gives the receiver's side of verify() and the
tests run that snippet against sign().
"""

from __future__ import annotations

import hashlib
import hmac

# A receiver accepts a delivery signed at most this long ago (or ahead: clocks differ).
# Stripe's libraries default to 300 s: long enough for a retry's queueing and clock skew,
# short enough that a captured delivery is useless soon.
TOLERANCE_S = 300


def digest(secret: str, timestamp: int, body: bytes) -> str:
    return hmac.new(secret.encode(), f"{timestamp}.".encode() + body, hashlib.sha256).hexdigest()


def header(secret: str, timestamp: int, body: bytes) -> str:
    return f"t={timestamp},v1={digest(secret, timestamp, body)}"


def verify(secret: str, body: bytes, signature: str, now: float,
           tolerance: float = TOLERANCE_S) -> bool:
    """True when ``signature`` (the header's value) signs ``body`` with ``secret`` within
    ``tolerance`` seconds of ``now``."""
    fields = dict(part.split("=", 1) for part in signature.split(",") if "=" in part)
    try:
        timestamp = int(fields["t"])
    except (KeyError, ValueError):
        return False
    if abs(now - timestamp) > tolerance:
        return False
    return hmac.compare_digest(digest(secret, timestamp, body), fields.get("v1", ""))
