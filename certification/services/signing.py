"""The platform's Ed25519 signing key: certificates are signed with it, and its public half
is published at /api/v1/certificates/public-key."""

from __future__ import annotations

import base64
from functools import lru_cache
from pathlib import Path
from typing import Any

from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey
from django.conf import settings
from django.core.exceptions import ImproperlyConfigured

from contract import key_fingerprint
from contract.canonical import canonical


@lru_cache(maxsize=1)
def private_key() -> Ed25519PrivateKey:
    path = Path(settings.CERT_SIGNING_KEY_FILE)
    if not path.exists():
        if settings.PRODUCTION:
            raise ImproperlyConfigured(f"CERT_SIGNING_KEY_FILE {path} does not exist")
        # Development: make one, so that a fresh checkout can certify (and say where it is).
        path.parent.mkdir(parents=True, exist_ok=True)
        pem = Ed25519PrivateKey.generate().private_bytes(
            serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8,
            serialization.NoEncryption())
        path.write_bytes(pem)
        path.chmod(0o600)
    key = serialization.load_pem_private_key(path.read_bytes(), password=None)
    if not isinstance(key, Ed25519PrivateKey):
        raise ImproperlyConfigured(f"{path} is not an Ed25519 private key")
    return key


def public_pem() -> bytes:
    return private_key().public_key().public_bytes(
        serialization.Encoding.PEM, serialization.PublicFormat.SubjectPublicKeyInfo)


def key_id() -> str:
    return key_fingerprint.key_id(public_pem())


def fingerprint() -> str:
    """What the certification page publishes for `benchctl trust add` to be compared with."""
    return key_fingerprint.fingerprint(public_pem())


def sign(document: dict[str, Any]) -> str:
    return base64.b64encode(private_key().sign(canonical(document))).decode()
