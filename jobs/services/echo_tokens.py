"""The token a run's RTT test carries to a reference's echo server (the run spec's, from its
attempt): the reference's record of the test is found by it."""

from __future__ import annotations

import hashlib
import hmac
from typing import Any

from django.conf import settings


def _mac(text: str) -> str:
    return hmac.new(settings.SECRET_KEY.encode(), text.encode(), hashlib.sha256).hexdigest()


def echo_token(attempt_id: Any) -> str:
    """The run's token for reference echo servers: bound to the attempt, unguessable, and
    checkable without the attempt (is_echo_token): its second half is the MAC of its first."""
    head = _mac(f"echo-token:{attempt_id}")[:16]
    return head + _mac(f"echo-check:{head}")[:16]


def is_echo_token(token: str) -> bool:
    """A token the platform issued: an outsider's connections under made-up tokens are
    records no run will ask for, and are not stored."""
    return len(token) == 32 and hmac.compare_digest(_mac(f"echo-check:{token[:16]}")[:16],
                                                    token[16:])
