"""The verdict: where to rent for the buyer's job, and why; and where not to.

The candidates are the estimate's (board/estimate_board.py) with, for a multi-node job,
each node offered as N of its kind (its gradient sync modelled on its own measured link, and
said to be). Each is timed at its worst hour too: where the platform's re-tests found its
bandwidth slower at some hours of the day (board/stability_board.py), a multi-node job's
all-reduce runs at that share of the link, and the verdict ranks on the worst hour, because
a job of days meets it every day.

Then, with the bounds of board/data/verdict.yaml:
- avoid a candidate whose gradient sync would be at least ``slow_link_share`` of the step
  at its worst hour ("sz-h800-02: its link runs at 0.19 Gbit/s, gradient sync would be 94%
  of the step"), or whose job takes (or costs) ``avoid_factor`` times the best's;
- name the best ``picks`` of the others, each with what the buyer checks before renting:
  figures that are only the provider's, a GPU taken from its datasheet, nodes never measured
  together, a node not re-tested across the day or slower at some hours, parts unmeasured,
  no price.

Codes and figures only: contract/outcomes.py words them, for the page, the API and benchctl.
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from functools import lru_cache
from pathlib import Path
from typing import Any

from django.utils.translation import gettext as _

from board import estimate_board, hours
from board.estimate import Estimate, Workload
from board.estimate_board import DATASHEET, Candidate, Selection
from board.hours import AtHours
from board.stability import NOT_ENOUGH, STABLE, VARIES_BY_HOUR
from contract import outcomes
from contract import rules as bounds
from contract.numbers import number
from jobs.models import Sample

RULES_FILE = Path(__file__).resolve().parent / "data" / "verdict.yaml"
# The default job when the buyer gives none: multi-node data-parallel training (#32).
DEFAULT_PRESET, DEFAULT_STEPS, DEFAULT_NODES = "gpt2-small", 10_000, 2


@lru_cache(maxsize=1)
def rules() -> dict[str, float]:
    return {name: b.value for name, b in bounds.load_bounds(RULES_FILE).items()}


@dataclass
class Pick:
    candidate: Candidate
    stability: str  # board.stability's verdict: the worst among its nodes
    worst_hours: list[int] = field(default_factory=list)
    worst: AtHours | None = None  # set when the worst hours make the job slower
    checks: list[dict[str, Any]] = field(default_factory=list)  # {code, values}
    reason: dict[str, Any] | None = None  # why to avoid it: {code, values}

    @property
    def timed(self) -> Estimate:
        """What the verdict ranks it on: its worst hour when it has one."""
        assert self.candidate.estimate is not None
        return self.worst.estimate if self.worst else self.candidate.estimate


@dataclass
class Verdict:
    workload: Workload
    rank_by: str
    picks: list[Pick]  # best first
    avoid: list[Pick]
    unknown: list[Candidate]  # skipped by the estimate, with the reason


def recommend(workload: Workload, selection: Selection, rank_by: str = "cost") -> Verdict:
    found = estimate_board.rank(workload, replace(selection, offers=True), rank_by)
    picks = [judged(c) for c in found if c.estimate is not None]
    picks.sort(key=lambda p: order(p, rank_by))
    limits = rules()
    best = next((p for p in picks if not slow_link(p, limits)), None)
    chosen: list[Pick] = []
    avoid: list[Pick] = []
    for p in picks:
        p.reason = slow_link(p, limits) or (worse(p, best, rank_by, limits) if best else None)
        if p.reason is not None:
            avoid.append(p)
        elif len(chosen) < limits["picks"]:
            chosen.append(p)
    return Verdict(workload, rank_by, chosen, avoid, [c for c in found if c.estimate is None])


def order(p: Pick, rank_by: str) -> tuple[Any, ...]:
    e = p.timed
    # Of two alike, the one whose day the platform has seen first.
    known = p.stability == NOT_ENOUGH
    if rank_by == "cost" and e.cost_cny is not None:
        return (0, e.cost_cny, known, p.candidate.name)
    return (0 if rank_by == "time" else 1, e.hours, known, p.candidate.name)


def judged(c: Candidate) -> Pick:
    """The candidate with its stability, its worst hours and what to check first."""
    known = [s for s in c.days if s.verdict != NOT_ENOUGH]
    if len(known) < len(c.days) and not any(s.verdict != STABLE for s in known):
        verdict = NOT_ENOUGH  # a node never re-tested could be the slow one
    else:
        verdict = min(known, key=lambda s: s.hour_ratio or 1.0).verdict if known else NOT_ENOUGH
    worst_of = min((s for s in known if s.hour_ratio), key=lambda s: s.hour_ratio or 1.0,
                   default=None)
    p = Pick(c, verdict, list(worst_of.worst_hours) if worst_of and verdict == VARIES_BY_HOUR
             else [])
    # Only a node slower at some hours of the day has worst hours a job meets every day.
    if verdict == VARIES_BY_HOUR and hours.WORST in c.by_hour:
        p.worst = c.by_hour[hours.WORST]
    p.checks = checks(p)
    return p


def checks(p: Pick) -> list[dict[str, Any]]:
    c, e = p.candidate, p.candidate.estimate
    out: list[dict[str, Any]] = []
    if c.evidence == Sample.HOST_REPORTED:
        out.append({"code": "host-reported", "values": {}})
    if c.evidence == DATASHEET or c.sources.get("tflops", "").startswith(DATASHEET):
        out.append({"code": "datasheet", "values": {}})
    if c.modelled:
        out.append({"code": "modelled", "values": {"copies": c.copies}})
    if p.stability == NOT_ENOUGH:
        out.append({"code": "not-enough-data", "values": {}})
    elif p.stability == VARIES_BY_HOUR and p.worst_hours:
        out.append({"code": "varies-by-hour", "values": {"hours_of_day": p.worst_hours}})
    if e is not None and e.unmeasured:
        out.append({"code": "unmeasured", "values": {"parts": list(e.unmeasured)}})
    if c.price_cny_month is None:
        out.append({"code": "no-price", "values": {}})
    return out


def slow_link(p: Pick, limits: dict[str, float]) -> dict[str, Any] | None:
    e, m = p.timed, p.candidate.figures
    share = e.shares.get("sync", 0.0)
    if share < limits["slow_link_share"] or m is None or not m.link_gbps:
        return None
    gbps = m.link_gbps * (p.worst.share if p.worst else 1.0)
    return {"code": "slow-link", "values": {"gbps": round(gbps, 3), "share": round(share, 3)}}


def worse(p: Pick, best: Pick, rank_by: str, limits: dict[str, float]) -> dict[str, Any] | None:
    if p is best:
        return None
    mine, theirs = p.timed, best.timed
    name = best.candidate.name
    if rank_by == "cost" and mine.cost_cny is not None and theirs.cost_cny is not None:
        if mine.cost_cny >= limits["avoid_factor"] * theirs.cost_cny:
            return {"code": "costlier", "values": {"cost": round(mine.cost_cny),
                                                   "best_cost": round(theirs.cost_cny),
                                                   "best": name}}
        return None
    if mine.hours >= limits["avoid_factor"] * theirs.hours:
        return {"code": "slower", "values": {"hours": mine.hours, "best_hours": theirs.hours,
                                             "best": name}}
    return None


# --- as data, worded in the request's language ---------------------------------------------

def pick_data(p: Pick) -> dict[str, Any]:
    worst = estimate_board.at_hours_data(p.worst) if p.worst else None
    data: dict[str, Any] = {
        "candidate": estimate_board.candidate_data(p.candidate), "evidence": p.candidate.evidence,
        "stability": p.stability, "worst_hours": p.worst_hours, "worst": worst,
        "checks": p.checks, "reason": p.reason}
    data["checks_text"] = [outcomes.check_words(k, number, _) for k in p.checks]
    data["text"] = (outcomes.avoid_sentence(data, number, _) if p.reason
                    else outcomes.pick_sentence(data, number, _))
    return data


def verdict_data(v: Verdict) -> dict[str, Any]:
    return {"workload": estimate_board.workload_data(v.workload), "rank_by": v.rank_by,
            "picks": [pick_data(p) for p in v.picks],
            "avoid": [pick_data(p) for p in v.avoid],
            "unknown": [estimate_board.candidate_data(c) for c in v.unknown],
            "summary": "" if v.picks else _(outcomes.NO_CANDIDATE)}
