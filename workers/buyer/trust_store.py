"""The public keys `benchctl verify` trusts: pinned by the person, never named by a certificate.

A certificate names its issuer's URL and key id, and an attacker who signs one with their own
key names their own server. So verify takes a key only from ``--public-key`` or from this
store: a file (``BENCH_TRUSTED_KEYS``, default ``~/.config/benchctl/trusted-keys.pem``) of
PEM public keys, each under a comment line with its key id and the platform URL it came from::

    # key-id 3f1c0e...  url https://bench.example.cn  added 2026-12-01T08:00:00+00:00
    -----BEGIN PUBLIC KEY-----
    ...
    -----END PUBLIC KEY-----

`benchctl trust add URL` fetches a platform's key once and prints its fingerprint (the key
id, sha256 of the PEM) for the person to compare with one obtained another way.
"""

from __future__ import annotations

import os
import re
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path

# Re-exported: `benchctl trust add` prints the fingerprint the platform's page publishes.
from contract.key_fingerprint import fingerprint as fingerprint
from contract.key_fingerprint import key_id

DEFAULT_PATH = Path("~/.config/benchctl/trusted-keys.pem")
_ENTRY = re.compile(r"^# key-id (?P<id>[0-9a-f]+)\s+url (?P<url>\S*).*?\n"
                    r"(?P<pem>-----BEGIN PUBLIC KEY-----\n.*?\n-----END PUBLIC KEY-----\n?)",
                    re.MULTILINE | re.DOTALL)


@dataclass(frozen=True)
class TrustedKey:
    key_id: str
    url: str
    pem: bytes


def path() -> Path:
    return Path(os.environ.get("BENCH_TRUSTED_KEYS") or DEFAULT_PATH).expanduser()


def load(store: Path | None = None) -> dict[str, TrustedKey]:
    """Trusted keys by key id; an entry whose PEM does not hash to its id is ignored."""
    store = store or path()
    try:
        text = store.read_text()
    except FileNotFoundError:
        return {}
    keys = {}
    for match in _ENTRY.finditer(text):
        pem = match["pem"].rstrip("\n").encode() + b"\n"
        if key_id(pem) == match["id"]:
            keys[match["id"]] = TrustedKey(match["id"], match["url"], pem)
    return keys


def add(pem: bytes, url: str, store: Path | None = None) -> TrustedKey:
    store = store or path()
    pem = pem.rstrip(b"\n") + b"\n"
    entry = TrustedKey(key_id(pem), url.rstrip("/"), pem)
    if entry.key_id in load(store):
        return entry
    store.parent.mkdir(parents=True, exist_ok=True)
    with store.open("a") as out:
        out.write(f"# key-id {entry.key_id}  url {entry.url}  added "
                  f"{datetime.now(UTC).isoformat(timespec='seconds')}\n{pem.decode()}")
    return entry
