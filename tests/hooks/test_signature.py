"""The delivery's signature (hooks.services.signature), and the receiver's check that
docs/api.md tells buyers to copy: the snippet itself is run here, not a copy of it."""

from __future__ import annotations

import re
import time
from collections.abc import Callable

from hooks.services import signature
from lab.procs import REPO

SECRET = "whsec_test"
BODY = b'{"data":{"job":1},"event":"job.finished","id":7}'


def documented_verify() -> Callable[..., bool]:
    """The ```python block of docs/api.md's webhook section, executed."""
    text = (REPO / "docs" / "api.md").read_text()
    section = text[text.index("## Webhooks"):]
    code = re.search(r"```python\n(.*?)```", section, re.S)
    assert code is not None
    names: dict[str, object] = {}
    exec(compile(code.group(1), "docs/api.md", "exec"), names)  # noqa: S102 - our own docs
    verify = names["verify"]
    assert callable(verify)
    return verify  # type: ignore[return-value]


def test_a_signed_body_verifies_with_its_secret() -> None:
    now = int(time.time())
    header = signature.header(SECRET, now, BODY)
    assert re.fullmatch(r"t=\d+,v1=[0-9a-f]{64}", header)
    assert signature.verify(SECRET, BODY, header, now)


def test_another_secret_or_a_changed_body_does_not_verify() -> None:
    now = int(time.time())
    header = signature.header(SECRET, now, BODY)
    assert not signature.verify("whsec_other", BODY, header, now)
    assert not signature.verify(SECRET, BODY.replace(b"1", b"2"), header, now)


def test_an_old_delivery_replayed_is_refused() -> None:
    then = int(time.time()) - signature.TOLERANCE_S - 1
    header = signature.header(SECRET, then, BODY)
    assert not signature.verify(SECRET, BODY, header, time.time())
    # The timestamp is signed: moving it forward breaks the signature.
    forged = header.replace(f"t={then}", f"t={int(time.time())}")
    assert not signature.verify(SECRET, BODY, forged, time.time())


def test_a_malformed_header_does_not_verify() -> None:
    for header in ("", "v1=abc", "t=x,v1=abc", "garbage"):
        assert not signature.verify(SECRET, BODY, header, time.time())


def test_the_documented_snippet_agrees_with_the_platform() -> None:
    verify = documented_verify()
    now = int(time.time())
    header = signature.header(SECRET, now, BODY)
    assert verify(SECRET, BODY, header)
    assert not verify("whsec_other", BODY, header)
    assert not verify(SECRET, BODY, signature.header(SECRET, now - 301, BODY))
