"""Figures as people read them, one formatter for the site, the API's words and benchctl.

Thousands separated, a fixed count of significant digits, never an exponent: 47240.3 ->
"47,240", 9.4123 -> "9.41" (three digits, the site's) or "9.412" (four, benchctl's tables,
where a buyer compares close figures), 0.0123 -> "0.0123", None -> "".
"""

from __future__ import annotations

import math
from collections.abc import Sequence


def number(value: float | None, significant: int = 3) -> str:
    if value is None:
        return ""
    if isinstance(value, int):
        return f"{value:,}"
    if not math.isfinite(value):
        return str(value)
    if value == 0:
        return "0"
    # Decimals for the significant digits; a figure of 10**(significant - 1) or more shows
    # its whole part.
    decimals = max(0, significant - 1 - math.floor(math.log10(abs(value))))
    text = f"{value:,.{decimals}f}"
    return text.rstrip("0").rstrip(".") if "." in text else text


def hour_spans(hours: Sequence[int]) -> str:
    """[20, 21, 22] -> "20:00-23:00"; [2, 14] -> "02:00-03:00, 14:00-15:00"."""
    spans: list[list[int]] = []
    for h in sorted(hours):
        if spans and h == spans[-1][1]:
            spans[-1][1] = h + 1
        else:
            spans.append([h, h + 1])
    return ", ".join(f"{a:02d}:00-{b % 24:02d}:00" for a, b in spans)
