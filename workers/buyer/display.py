"""How benchctl shows rows: a table for people; JSON and CSV, with the raw numbers, for machines.

A person reads 47,240 and 0.0123 at a glance, not 4.724e+04: `number` keeps four significant
digits, thousands separators and never an exponent. Two figures that show the same are the
same figure (`same_figure`): a winner nobody can see in the table is no winner.
"""

from __future__ import annotations

import csv
import io
import json
import math
from dataclasses import dataclass
from typing import Any

from rich.console import Console
from rich.table import Table

from contract import numbers
from workers.buyer import columns
from workers.i18n import _

SIGNIFICANT = 4
# Figures that differ by less than this are one figure, however they round.
RELATIVE_TOLERANCE = 1e-9
console = Console()


def number(value: float | None) -> str:
    return numbers.number(value, SIGNIFICANT)


def same_figure(a: float, b: float) -> bool:
    return math.isclose(a, b, rel_tol=RELATIVE_TOLERANCE) or number(a) == number(b)


@dataclass(frozen=True)
class Figure:
    """A measured value with its spread: one cell in a table, three numbers in JSON and CSV."""

    value: float | None
    p5: float | None = None
    p95: float | None = None

    def text(self) -> str:
        if self.value is None:
            return "-"
        spread = (f" ({number(self.p5)}–{number(self.p95)})"
                  if self.p5 is not None and self.p95 is not None else "")
        return number(self.value) + spread


class _Tie(str):
    """The word "tie": a plain "tie" in JSON and CSV, translated in a table; a node that is
    named "tie" stays a node."""


TIE = _Tie("tie")


def headers() -> dict[str, str]:
    """Column headers people read; node names (compare's columns) are shown as they are."""
    return {"node": _("node"), "metric": _("metric"), "value": _("value"), "unit": _("unit"),
            "n": _("n"), "peer": _("peer"), "status": _("status"), "progress": _("progress"),
            "error": _("error"), "rank": _("rank"), "provider": _("provider"),
            "region": _("region"), "score": _("score"), "stale": _("stale"), "winner": _("winner"),
            "candidate": _("candidate"), "step_s": _("step (s)"), "hours": _("hours"),
            "cost_cny": _("cost (CNY)"), "bottleneck": _("bottleneck"), "notes": _("notes"),
            "reason": _("reason"), "where": f"{_('provider')} / {_('region')}",
            "site": _("site"), "city": _("city"), "rtt_ms": _("RTT (ms)"),
            "node_rtt_ms": _("node's own RTT (ms)"), "upload_gbps": _("upload (Gbit/s)"),
            "download_gbps": _("download (Gbit/s)"), "hops": _("hops"),
            "confirmed": _("confirmed by the node")}


def cell(value: Any) -> str:
    if isinstance(value, Figure):
        return value.text()
    if isinstance(value, _Tie):
        return _("tie")
    if isinstance(value, bool):
        return _("yes") if value else _("no")
    if isinstance(value, int | float):
        return number(value)
    return "" if value is None else str(value)


def _numeric(value: Any) -> bool:
    return isinstance(value, Figure | int | float) and not isinstance(value, bool)


def flat(row: dict[str, Any]) -> dict[str, Any]:
    """A Figure under "hz-1" becomes "hz-1", "hz-1 p5" and "hz-1 p95"."""
    out: dict[str, Any] = {}
    for key, value in row.items():
        if isinstance(value, Figure):
            out.update({key: value.value, f"{key} p5": value.p5, f"{key} p95": value.p95})
        else:
            out[key] = str(value) if isinstance(value, _Tie) else value
    return out


def print_rows(rows: list[dict[str, Any]], fmt: str, title: str = "",
               kept: list[str] | None = None, once: list[str] | None = None) -> None:
    if fmt == "json":
        print(json.dumps([flat(r) for r in rows], indent=2))
        return
    if fmt == "csv":
        flats = [flat(r) for r in rows]
        # Every row's columns, in order: compare's score row has no spread columns.
        columns = list(dict.fromkeys(key for r in flats for key in r)) or ["node"]
        out = io.StringIO()
        writer = csv.DictWriter(out, fieldnames=columns)
        writer.writeheader()
        writer.writerows(flats)
        print(out.getvalue(), end="")
        return
    _print_table(rows, title, kept, once)


class Heading(str):
    """A row that names the rows under it (compare's areas): bold, alone in its row."""


# A row that draws a line across the table between two groups of rows.
SECTION: dict[str, Any] = {}


def _print_table(rows: list[dict[str, Any]], title: str, kept: list[str] | None,
                 once: list[str] | None) -> None:
    """On a terminal, the table fits its width: cells wrap between words, and when the
    columns outside ``kept`` (compare's nodes) do not fit beside the kept ones, they go in
    several blocks, one under the other, each with the kept columns, the last one with the
    ``once`` columns too (compare's winner). In a log or a pipe,
    which has no width to fit, each cell is whole, on one line."""
    names = headers()
    keys = list(dict.fromkeys(key for row in rows for key in row)) or ["node"]
    texts = {key: [cell(row.get(key)) for row in rows] for key in keys}
    table_columns = {key: columns.Column(names.get(key, key), tuple(texts[key])) for key in keys}
    total = console.width if console.is_terminal else 1_000_000
    kept = keys if kept is None else [key for key in keys if key in kept]
    last = [key for key in keys if key in (once or [])]
    spread = [key for key in keys if key not in kept and key not in last]
    parts = columns.blocks([table_columns[k] for k in kept], [table_columns[k] for k in spread],
                           total, [table_columns[k] for k in last])
    for number_of, part in enumerate(parts):
        mine = {spread[i] for i in part} | (set(last) if number_of == len(parts) - 1 else set())
        shown = [key for key in keys if key in kept or key in mine]
        widths = columns.widths([table_columns[k] for k in shown], total)
        table = Table(title=(title or None) if number_of == 0 else None)
        for key, width in zip(shown, widths, strict=True):
            values = [row.get(key) for row in rows if row.get(key) not in (None, "")]
            numeric = bool(values) and all(_numeric(v) for v in values)
            # Fold, never "…": a node name cut short is another node's name.
            table.add_column(columns.wrap(table_columns[key].header, width), width=width,
                             justify="right" if numeric else "left", no_wrap=True,
                             overflow="fold")
        for row in rows:
            if row is SECTION:
                table.add_section()
                continue
            heading = any(isinstance(v, Heading) for v in row.values())
            table.add_row(*(columns.wrap(cell(row.get(key)), width)
                            for key, width in zip(shown, widths, strict=True)),
                          style="bold" if heading else None)
        if console.is_terminal:
            console.print(table)
        else:
            Console(file=console.file, width=max(columns.table_width(widths),
                                                 console.width)).print(table)
