"""Random secrets shown once and stored as hashes.

The secrets are 32 random bytes, so a plain SHA-256 is enough: there is nothing to
brute-force, and a fast hash keeps every node request cheap.
"""

from __future__ import annotations

import hashlib
import hmac
import secrets


def new_secret() -> str:
    # One in 64 URL-safe secrets starts with "-", which a command line takes for an option
    # (`benchctl enroll --token -x...` failed): draw again.
    while True:
        secret = secrets.token_urlsafe(32)
        if not secret.startswith("-"):
            return secret


def digest(secret: str) -> str:
    return hashlib.sha256(secret.encode()).hexdigest()


def matches(secret: str, stored_digest: str) -> bool:
    return hmac.compare_digest(digest(secret), stored_digest)


def new_api_key() -> tuple[str, str, str]:
    """A node API key ``nk_<prefix>.<secret>``, its prefix (for lookup) and its digest."""
    prefix = secrets.token_hex(6)
    key = f"nk_{prefix}.{new_secret()}"
    return key, prefix, digest(key)


def split_api_key(key: str) -> str | None:
    """The lookup prefix of a node key, or None when the key is not of our shape."""
    if not key.startswith("nk_") or "." not in key:
        return None
    prefix = key[3:].split(".", 1)[0]
    return prefix if len(prefix) == 12 else None
