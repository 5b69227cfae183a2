"""The bytes a certificate's signature covers: the document's canonical JSON.

Sorted keys, no spaces, UTF-8 (not ASCII escapes): the platform signs these bytes
(certification/services/signing.py) and `benchctl verify` checks them
(workers/buyer/certificate.py), so both must produce exactly the same.
"""

from __future__ import annotations

import json
from typing import Any


def canonical(document: dict[str, Any]) -> bytes:
    return json.dumps(document, sort_keys=True, separators=(",", ":"), ensure_ascii=False).encode()
