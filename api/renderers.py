"""CSV for procurement spreadsheets: `?format=csv` on list endpoints."""

from __future__ import annotations

import csv
import io
from collections.abc import Mapping
from typing import Any

from rest_framework.renderers import BaseRenderer

# A cell a spreadsheet would read as a formula (OWASP "CSV injection"): host-supplied text
# (a GPU model name, a peer name) reaches these exports.
FORMULA_STARTS = ("=", "+", "-", "@", "\t", "\r")


def safe_cell(value: Any) -> Any:
    if isinstance(value, str) and value.startswith(FORMULA_STARTS):
        return "'" + value
    return value


def flatten(row: dict[str, Any], prefix: str = "") -> dict[str, Any]:
    flat: dict[str, Any] = {}
    for key, value in row.items():
        name = f"{prefix}{key}"
        if isinstance(value, dict):
            flat.update(flatten(value, f"{name}."))
        elif isinstance(value, list):
            flat[name] = safe_cell("; ".join(str(v.get("code", v)) if isinstance(v, dict)
                                             else str(v) for v in value))
        else:
            flat[name] = safe_cell(value)
    return flat


class CSVRenderer(BaseRenderer):
    media_type = "text/csv"
    format = "csv"
    charset = "utf-8"

    def render(self, data: Any, accepted_media_type: str | None = None,
               renderer_context: Mapping[str, Any] | None = None) -> bytes:
        if isinstance(data, dict) and "results" in data:
            data = data["results"]
        rows = [flatten(r) for r in data] if isinstance(data, list) else [flatten(data or {})]
        columns: list[str] = []
        for row in rows:
            columns += [c for c in row if c not in columns]
        out = io.StringIO()
        writer = csv.DictWriter(out, fieldnames=columns)
        writer.writeheader()
        writer.writerows(rows)
        # A BOM so that spreadsheet programs read the Chinese names as UTF-8.
        return ("\ufeff" + out.getvalue()).encode("utf-8")
