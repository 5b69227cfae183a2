"""compare's table for people: the metrics by area (network, data loading, storage, training,
GPU), each under its label in the reader's language, in the contract's order within its area;
the score last. JSON and CSV keep client.compare's rows: metric ids, raw numbers."""

from __future__ import annotations

from typing import Any

from contract import areas, metrics
from workers.buyer import display, words
from workers.i18n import _

_ORDER = {name: i for i, name in enumerate(metrics.METRICS)}
_AREA_ORDER = {key: i for i, (key, _label, _test) in enumerate(areas.AREAS)}


def _place(metric: str) -> tuple[int, int, str]:
    return (_AREA_ORDER[areas.area_of(metric)], _ORDER.get(metric, len(_ORDER)), metric)


def table_rows(rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """client.compare's rows as a person reads them: a heading per area, a rule between areas."""
    measured = sorted((r for r in rows if r["metric"] != "score"), key=lambda r: _place(r["metric"]))
    out: list[dict[str, Any]] = []
    shown_area = None
    for row in measured:
        area = areas.area_of(row["metric"])
        if area != shown_area:
            if out:
                out.append(display.SECTION)
            out.append({"metric": display.Heading(words.area(row["metric"]))})
            shown_area = area
        out.append({**row, "metric": words.label(row["metric"]), "unit": words.unit(row["unit"])})
    for row in rows:
        if row["metric"] == "score":
            if out:
                out.append(display.SECTION)
            out.append({**row, "metric": _("score")})
    return out
