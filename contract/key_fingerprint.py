"""A platform signing key's id and fingerprint, from its PEM: the one definition that the
platform publishes (the certification page, the certificates' issuer) and that `benchctl
trust add` prints for the person to compare. Two spellings would let a pinned key and the
published one disagree on a key that is in fact the same."""

from __future__ import annotations

import hashlib


def key_id(pem: bytes) -> str:
    """The key's id: the first 16 hex digits of the PEM's sha256."""
    return hashlib.sha256(pem).hexdigest()[:16]


def fingerprint(pem: bytes) -> str:
    """The first 128 bits of the PEM's sha256, in groups of four hex digits, to read aloud."""
    digest = hashlib.sha256(pem).hexdigest()
    return ":".join(digest[i:i + 4] for i in range(0, 32, 4))
