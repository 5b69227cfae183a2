"""The platform's re-tests on the pages: the board's stability badge beside each row's ranked
figure, and a node's watched figures by hour of the day with its provider's pauses.

The verdicts and the diagnosis come from board.stability_board; this module
only shapes them for the templates, in the request's language. A node the platform has not
re-tested (no re-test done or missed) shows nothing here: a board without re-tests looks as
it did before them.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from datetime import datetime
from typing import Any

from django.conf import settings
from django.utils import timezone
from django.utils.translation import gettext as _
from django.utils.translation import ngettext

from board import diagnosis, stability_board
from board.ranking import Entry
from board.stability import VARIES_BY_HOUR, Stability, rules
from contract import metrics
from contract.numbers import hour_spans
from fleet.models import Node, RetestPause
from web import charts, words

MANY_HOURS = 12  # more bars than this: thinner bars, so a full day stays one screen high


def re_tested(s: Stability | None) -> bool:
    return s is not None and (s.retests > 0 or s.missed > 0)


def pauses_now(node_ids: Iterable[int], now: datetime | None = None) -> dict[int, RetestPause]:
    """Each node's pause in force now (the one that ends last)."""
    now = now or timezone.now()
    out: dict[int, RetestPause] = {}
    for p in RetestPause.objects.filter(node_id__in=list(node_ids), start__lte=now,
                                        end__gt=now).order_by("end"):
        out[p.node_id] = p
    return out


def when(moment: datetime) -> str:
    return f"{timezone.localtime(moment):%Y-%m-%d %H:%M}"


def counts(s: Stability) -> str:
    """"12 re-tests at 6 hours of the day, 0 missed"."""
    return _("%(retests)s at %(hours)s, %(missed)s") % {
        "retests": ngettext("%(n)s re-test", "%(n)s re-tests", s.retests) % {"n": s.retests},
        "hours": ngettext("%(n)s hour of the day", "%(n)s hours of the day", s.hours) % {
            "n": s.hours},
        "missed": ngettext("%(n)s missed", "%(n)s missed", s.missed) % {"n": s.missed}}


def worst_against_best(metric: str, s: Stability) -> str:
    """"worst hour 32% of the best" (or, lower being better, "3.1x the best"), and when."""
    if s.hour_ratio is None or s.hours < 2 or not s.worst_hours:
        return ""
    hours = hour_spans(s.worst_hours)
    if metrics.METRICS[metric].higher_is_better:
        return _("worst hour %(share)s of the best (%(hours)s)") % {
            "share": f"{s.hour_ratio:.0%}", "hours": hours}
    return _("worst hour %(times)s× the best (%(hours)s)") % {
        "times": charts.number(s.spread or 1.0), "hours": hours}


def held_back(s: Stability) -> list[str]:
    """Why re-tests that ran are not enough: the provider's pauses."""
    out = []
    if s.paused_share > rules()["max_paused_share"]:
        out.append(_("re-tests paused for %(share)s of the window") % {
            "share": f"{s.paused_share:.0%}"})
    if s.recurring_pause_hour is not None:
        out.append(_("paused at %(hours)s on several days") % {
            "hours": hour_spans([s.recurring_pause_hour])})
    return out


# --- the board -----------------------------------------------------------------------------

def board_marks(board: Sequence[Entry], now: datetime | None = None) -> list[dict[str, Any]]:
    """Per row: the ranked figure's verdict, its badge and tooltip, and whether the node's
    provider has paused its re-tests right now."""
    paused = pauses_now((e.row.node_id for e in board), now)
    return [mark(e.row.metric, e.stability, paused.get(e.row.node_id)) for e in board]


def mark(metric: str, s: Stability | None, pause: RetestPause | None) -> dict[str, Any]:
    out: dict[str, Any] = {"verdict": "", "badge": "", "title": _("not re-tested yet"),
                           "paused": pause is not None, "paused_title": "", "pause_reason": ""}
    if s is not None and re_tested(s):
        out.update(verdict=s.verdict, badge=stability_board.badge(s), title="; ".join(
            x for x in [counts(s), worst_against_best(metric, s), *held_back(s)] if x))
    if pause is not None:
        # The provider's reason is its own text, in its own language: shown beside the
        # badge, marked as such (translate="no"), not inside a tooltip of the page's language.
        out["paused_title"] = _("re-tests paused by the provider until %(end)s") % {
            "end": when(pause.end)}
        out["pause_reason"] = pause.reason
    return out


def shown(marks: Sequence[dict[str, Any]]) -> bool:
    """The column appears once any row has been re-tested or is paused."""
    return any(m["verdict"] or m["paused"] for m in marks)


# --- a node's page -------------------------------------------------------------------------

def hour_chart(metric: str, s: Stability) -> str:
    """The figure by hour of the day: one bar per hour with a median, the worst hours named
    when the verdict is that it varies by hour."""
    unit = words.unit(metric)
    worst = set(s.worst_hours) if s.verdict == VARIES_BY_HOUR else set()
    note = " · " + _("worst hour")
    bars = [charts.Bar(f"{h:02d}:00", v, note=note if h in worst else "")
            for h, v in sorted(s.by_hour.items())]
    return charts.bar_chart(bars, unit, f"{words.label(metric)} ({unit})",
                            bar_height=12 if len(bars) > MANY_HOURS else 18)


def card(metric: str, s: Stability) -> dict[str, Any]:
    found = stability_board.finding(metric, s)
    return {"metric": metric, "label": words.label(metric), "verdict": s.verdict,
            "badge": stability_board.badge(s), "counts": counts(s),
            "cv": None if s.cv is None else f"{s.cv:.0%}",
            "hours": worst_against_best(metric, s), "held_back": held_back(s),
            "chart": hour_chart(metric, s), "finding": found}


def node_section(node: Node, now: datetime | None = None) -> dict[str, Any]:
    """The node's cards (the watched figures it has re-tests of), its pauses in the window
    and the one in force now, and the diagnosis sentences for the page's findings."""
    now = now or timezone.now()
    found = stability_board.of_node(node.pk, now)
    pauses = [{"start": p.start, "end": p.end, "now": p is found.paused_now,
               "hours": charts.number(round((p.end - p.start).total_seconds() / 3600, 1)),
               "reason": p.reason} for p in found.pauses]
    return {"cards": [card(m, s) for m, s in found.figures.items() if re_tested(s)],
            "pauses": pauses, "paused_now": next((p for p in pauses if p["now"]), None),
            "days": settings.STABILITY_WINDOW_DAYS, "zone": zone(now), "figures": found.figures}


def zone(now: datetime) -> str:
    """The site's time zone as an offset ("UTC+08:00"): the hours on the page are its hours."""
    offset = timezone.localtime(now).strftime("%z")
    return f"UTC{offset[:3]}:{offset[3:]}" if offset else "UTC"


def findings(section: dict[str, Any]) -> list[diagnosis.Finding]:
    return [c["finding"] for c in section["cards"] if c["finding"] is not None]
