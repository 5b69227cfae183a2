"""Certification criteria, pure: a profile's criterion judged on a run's figures, the tier
from the margins, the certificate's title. No database: `Figures` is what was measured.

Tiers come from the smallest margin over the thresholds among the applicable criteria:

    margin = (value - threshold) / threshold     for >= and >
    margin = (threshold - value) / threshold     for <= and <
    tier   = gold if min margin >= 0.5, silver if >= 0.2, else bronze

A criterion stands on measured figures only (the evidence ladder): platform-verified ones
(``verified_by: reference`` takes nothing else), else buyer-measured ones (a buyer's trial
agent of the node). A criterion only the host's word speaks to is ``claimed`` when the
claim meets it (listed on the certificate, never certified: the tier is partial) and fails
when it does not.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

from contract import rules
from contract.rules import COMPARISONS

TIERS = [(0.5, "gold"), (0.2, "silver"), (0.0, "bronze")]
# Given when a criterion could not be measured here (no GPU): below every full tier.
PARTIAL_TIER = "partial"
TIER_ORDER = ["gold", "silver", "bronze", PARTIAL_TIER]


@dataclass(frozen=True)
class Figure:
    metric: str
    value: float
    verified: bool  # platform-verified: the reference endpoint's own record
    source: str
    # Platform-verified or buyer-measured (a buyer's trial agent): the evidence ladder's
    # rungs a criterion stands on; the rest is the host's claim.
    measured: bool = False


class Figures:
    """A run's figures (one per metric and peer)."""

    def __init__(self, figures: Iterable[Figure]) -> None:
        self.figures = list(figures)

    def worst(self, metric: str, higher_is_better: bool, verified: bool = False,
              measured: bool = False) -> tuple[float, str] | None:
        """The worst figure of the metric (across peers) and its evidence source; only the
        platform-verified ones, or only the measured ones, when asked."""
        rows = [(f.value, f.source) for f in self.figures
                if f.metric == metric and (f.verified or not verified)
                and (f.verified or f.measured or not measured)]
        if not rows:
            return None
        return (min if higher_is_better else max)(rows, key=lambda row: row[0])

    def worst_value(self, metric: str, higher_is_better: bool) -> float | None:
        found = self.worst(metric, higher_is_better)
        return found[0] if found else None


@dataclass(frozen=True)
class Outcome:
    metric: str
    comparison: str
    threshold: float | None
    value: float | None
    status: str  # pass, fail, not applicable
    margin: float | None
    why: str
    source: str

    def as_dict(self) -> dict[str, Any]:
        return self.__dict__.copy()


def threshold_of(spec: Any, figures: Figures) -> float | None:
    """A number; {link_class: N}: what an honest N GbE link measures; {metric, factor}: of
    the run's lowest figure of that metric (contract.rules reads all three)."""
    return rules.threshold(spec, lambda metric: figures.worst_value(metric, True))


def evaluate_criterion(criterion: dict[str, Any], figures: Figures, multi_node: bool,
                       has_gpu: bool) -> Outcome:
    metric = criterion["metric"]
    comparison = criterion["comparison"]
    higher = comparison in (">", ">=")
    why = criterion.get("why", "")
    requires = criterion.get("requires")
    if (requires == "gpu" and not has_gpu) or (requires == "multi_node" and not multi_node):
        reason = "no NVIDIA GPU on this host" if requires == "gpu" else "single node"
        return Outcome(metric, comparison, None, None, "not applicable", None,
                       f"{why} ({reason})", "")
    threshold = threshold_of(criterion["threshold"], figures)
    by_reference = criterion.get("verified_by") == "reference"
    found = figures.worst(metric, higher, verified=by_reference)
    value = found[0] if found else None
    if by_reference:
        if found is None:
            host = figures.worst_value(metric, higher)
            return Outcome(metric, comparison, threshold, host, "unverified", None,
                           f"{why} (no reference endpoint recorded this node's tests: the "
                           "platform cannot vouch for the host's figure)", "host report")
        source = found[1]
    else:
        found = figures.worst(metric, higher, measured=True)
        if found is None:
            return _claimed(criterion, figures, threshold)
        value, source = found
    if value is None or threshold is None:
        return Outcome(metric, comparison, threshold, value, "fail", None,
                       f"{why} (not measured)", source)
    ok = COMPARISONS[comparison](value, threshold)
    margin = ((value - threshold) if higher else (threshold - value)) / threshold if threshold else None
    return Outcome(metric, comparison, threshold, value, "pass" if ok else "fail",
                   round(margin, 4) if margin is not None else None, why, source)


def _claimed(criterion: dict[str, Any], figures: Figures, threshold: float | None) -> Outcome:
    """A criterion only the host's word speaks to: a claim that fails it fails (no host lies
    to its own cost), one that meets it is ``claimed``, never certified."""
    metric, comparison, why = criterion["metric"], criterion["comparison"], criterion.get("why", "")
    host = figures.worst_value(metric, comparison in (">", ">="))
    if host is None or threshold is None or not COMPARISONS[comparison](host, threshold):
        return Outcome(metric, comparison, threshold, host, "fail", None,
                       f"{why} ({'not measured' if host is None else 'as its host reports'})",
                       "host report")
    return Outcome(metric, comparison, threshold, host, "claimed", None,
                   f"{why} (host-reported: the platform cannot vouch for it; a buyer's trial "
                   "measures it)", "host report")


def tier(outcomes: list[Outcome]) -> str:
    if any(o.status in ("not applicable", "claimed") for o in outcomes):
        # Not everything was measured: no medal for what was skipped or only claimed.
        return PARTIAL_TIER
    margins = [o.margin for o in outcomes if o.status == "pass" and o.margin is not None]
    smallest = min(margins) if margins else 0.0
    return next(name for floor, name in TIERS if smallest >= floor)


def title(profile_name: str, outcomes: list[Outcome]) -> str:
    missing = [o for o in outcomes if o.status == "not applicable"]
    claimed = [o for o in outcomes if o.status == "claimed"]
    if not missing and not claimed:
        return f"certified: {profile_name}"
    parts = []
    if missing:
        parts.append("GPU" if all("GPU" in o.why for o in missing)
                     else ", ".join(o.metric for o in missing))
    if claimed:
        parts.append(f"what only its host reports ({', '.join(o.metric for o in claimed)})")
    return f"certified without {' or '.join(parts)}: {profile_name}"
