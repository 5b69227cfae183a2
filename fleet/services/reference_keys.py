"""The key a reference's agent hands in its servers' records with (`Reference <key>`).

A reference is the platform's own machine in its region, not a host: its key is issued by
the platform's operator (`manage.py reference_endpoint ... --key-file`), shown once and
stored as a digest, and it authenticates nothing but the reference's records.
"""

from __future__ import annotations

from cryptography.hazmat.primitives.asymmetric import rsa
from cryptography.hazmat.primitives.serialization import load_pem_public_key

from config.errors import Invalid
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


MAX_PUBLIC_KEY_BYTES = 8192
MIN_RSA_BITS = 2048


def set_iperf3_public_key(endpoint: ReferenceEndpoint, pem: str) -> None:
    """The public key the reference's iperf3 server authenticates turns with, as its agent
    hands it in: a PEM RSA public key of at least MIN_RSA_BITS (else Invalid). It is the
    server's: every endpoint on that server (host and iperf3 port) shares it."""
    if len(pem.encode()) > MAX_PUBLIC_KEY_BYTES:
        raise Invalid(f"public_key: at most {MAX_PUBLIC_KEY_BYTES} bytes",
                      errors={"public_key": "too long"})
    try:
        key = load_pem_public_key(pem.encode())
    except ValueError:
        raise Invalid("public_key: not a PEM public key (-----BEGIN PUBLIC KEY-----)",
                      errors={"public_key": "not a PEM public key"}) from None
    if not isinstance(key, rsa.RSAPublicKey) or key.key_size < MIN_RSA_BITS:
        raise Invalid(f"public_key: iperf3 takes an RSA key of at least {MIN_RSA_BITS} bits",
                      errors={"public_key": "not an RSA key of 2048 bits or more"})
    ReferenceEndpoint.objects.filter(host=endpoint.host, iperf3_port=endpoint.iperf3_port).update(
        iperf3_public_key=pem)
