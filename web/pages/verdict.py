"""The verdict box, wherever a page shows it: the board (for the default job, multi-node
data-parallel training, or the one its form asked for) and the estimate page (the buyer's
job). board.verdict decides; this module only words each line in the page's language and
links each candidate to its page."""

from __future__ import annotations

from typing import Any

from django.urls import reverse
from django.utils.translation import gettext as _

from board import estimate, verdict
from board.estimate import Workload
from board.estimate_board import Selection

MAX_UNKNOWN = 5  # named with the reason when nothing can be picked; the rest counted


def default_job() -> Workload:
    return estimate.from_preset(verdict.DEFAULT_PRESET, steps=verdict.DEFAULT_STEPS,
                                nodes=verdict.DEFAULT_NODES)


def box(workload: Workload, selection: Selection, rank_by: str = "cost") -> dict[str, Any]:
    found = verdict.verdict_data(verdict.recommend(workload, selection, rank_by))
    return {"workload": found["workload"],
            "picks": [line(p) for p in found["picks"]],
            "avoid": [line(p) for p in found["avoid"]],
            # Without a pick, why not: each candidate's missing figure, worded from its code.
            "unknown": [{"name": c["name"], "href": href_of(c),
                         "reason": without_name(c["skipped"], c["name"])}
                        for c in found["unknown"]][:MAX_UNKNOWN],
            "unknown_count": len(found["unknown"]), "summary": found["summary"],
            "title": _("Where to rent for %(model)s on %(nodes)s node(s), %(steps)s steps") % {
                "model": workload.name, "nodes": workload.nodes, "steps": f"{workload.steps:,}"}}


def without_name(reason: str, name: str) -> str:
    """The reason after the candidate's name, which the box shows as its link already
    ("hz-1: hz-1: no GPU enrolled" read twice)."""
    for colon in (": ", "："):
        if reason.startswith(name + colon):
            return reason[len(name + colon):]
    return reason


def href_of(c: dict[str, Any]) -> str:
    return reverse("node-page", args=[c["id"]]) if c["kind"] == "node" else ""


def line(p: dict[str, Any]) -> dict[str, Any]:
    c = p["candidate"]
    href = href_of(c)
    name = c["name"]
    # The sentence opens with the candidate's name: the page links it.
    rest = p["text"][len(name):] if p["text"].startswith(name) else p["text"]
    return {"name": name, "href": href, "rest": rest, "code": (p["reason"] or {}).get("code", ""),
            "kind": c["kind"], "id": c["id"]}
