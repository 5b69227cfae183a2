"""Checking a certificate anyone was given: signature, expiry, revocation.

Which key to check it with is the caller's choice (a pinned key: workers/buyer/trust_store.py),
never the certificate's: its issuer URL and key id are only hints.

A certificate is ``{"document": {...}, "signature": "<base64 Ed25519>"}``; the signature is
over the document's canonical JSON (sorted keys, no spaces, UTF-8). This module is what
`benchctl verify` runs: no Django, only the `cryptography` package.
"""

from __future__ import annotations

import base64
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any

from cryptography.exceptions import InvalidSignature
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PublicKey

from contract.canonical import canonical
from workers.i18n import _


def load_public_key(pem: bytes) -> Ed25519PublicKey:
    key = serialization.load_pem_public_key(pem)
    if not isinstance(key, Ed25519PublicKey):
        raise ValueError(_("the public key is not an Ed25519 key"))
    return key


@dataclass
class Verdict:
    valid: bool
    # Why not, or what was not checked; like revocation, in the person's language.
    reasons: list[str] = field(default_factory=list)
    revocation: str = field(default_factory=lambda: _("not checked"))
    # What it certifies, read from the document once its signature checked out (a forged
    # document's words are not shown as the platform's).
    subject: str = ""

    def line(self) -> str:
        head = _("VALID") if self.valid else _("INVALID")
        verdict = _("{verdict}: {reasons}").format(verdict=head, reasons=_("; ").join(
            self.reasons + [_("revocation {state}").format(state=self.revocation)]))
        return f"{verdict}\n  {self.subject}" if self.subject else verdict


def subject(document: dict[str, Any]) -> str:
    """Which node, of whom, against which profile, at which tier: what the buyer checks the
    certificate is about."""
    def part(key: str, name: str) -> str:
        value = document.get(key)
        return str(value.get(name, "?")) if isinstance(value, dict) else "?"
    return _("certificate {id}: node {node} of {provider} ({region}), profile {profile} "
             "v{version}, tier {tier}").format(
        id=document.get("id", "?"), node=part("node", "name"), provider=part("provider", "name"),
        region=part("region", "code"), profile=part("profile", "name"),
        version=part("profile", "version"), tier=document.get("tier", "?"))


def verify(certificate: dict[str, Any], public_key: Ed25519PublicKey,
           now: datetime | None = None, revoked: bool | None = None) -> Verdict:
    """Check signature and expiry; ``revoked`` is what the platform said (None: offline)."""
    document = certificate.get("document")
    signature = certificate.get("signature")
    if not isinstance(document, dict) or not isinstance(signature, str):
        return Verdict(False, [_("not a certificate: it needs a document and a signature")])
    reasons: list[str] = []
    valid, signed = True, False
    try:
        public_key.verify(base64.b64decode(signature), canonical(document))
        reasons.append(_("signature good"))
        signed = True
    except (InvalidSignature, ValueError):
        valid = False
        reasons.append(_("signature does not match: the document was changed or signed with "
                         "another key"))
    now = now or datetime.now(UTC)
    try:
        expires = datetime.fromisoformat(str(document["expires_at"]))
    except (KeyError, ValueError):
        return Verdict(False, [*reasons, _("no valid expires_at")])
    if expires <= now:
        valid = False
        reasons.append(_("expired on {date}").format(date=expires.isoformat()))
    else:
        reasons.append(_("valid until {date}").format(date=expires.isoformat()))
    verdict = Verdict(valid, reasons, subject=subject(document) if signed else "")
    if revoked is None:
        verdict.revocation = _("not checked (offline)")
    elif revoked:
        verdict.valid = False
        verdict.revocation = _("checked online: REVOKED")
    else:
        verdict.revocation = _("checked online: not revoked")
    return verdict
