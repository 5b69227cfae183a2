"""What an estimate says, as codes with values, and the one wording of each.

The platform answers with codes and values: a skipped candidate's ``skipped_code`` and
``skipped_values``, an estimate's bottleneck, shares and what-ifs. Each reader words them
from the templates here, in its own language: the web pages and the API's text through
Django's catalogue, benchctl through its own (both extract these strings). So the page,
the API and benchctl say the same thing, and a new outcome is one entry here, not a
sentence written three times and read back by regular expressions.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any


def gettext_noop(text: str) -> str:
    """Marks a template for both catalogues; each reader translates it when it words it."""
    return text


Gettext = Callable[[str], str]

SKIPPED: dict[str, str] = {
    "needs-cluster": gettext_noop(
        "a {nodes}-node job needs nodes measured together: run the training suite on {nodes} "
        "nodes as one job, then estimate its cluster"),
    "not-an-offer": gettext_noop(
        "not a ranked offer: measured with custom parameters or across providers"),
    "host-reported-cluster": gettext_noop(
        "its figures are its hosts' own (host-reported): no buyer's trial agents have measured "
        "this cluster; ask with evidence any to use the claims"),
    "cluster-size": gettext_noop("a cluster of {size} nodes; the job runs on {nodes}"),
    "unmeasured-figure": gettext_noop(
        "no measured {metric} figure on the board ({profile} profile) for {names}: only the "
        "provider's host reported it; a trial measures it"),
    "no-figure": gettext_noop("no {metric} figure on the board ({profile} profile) for {names}"),
    "no-gpu": gettext_noop(
        "{names}: no GPU enrolled or measured; a CPU-only job can be estimated on its CPU"),
    "no-busbw": gettext_noop("no all-reduce bus bandwidth was measured across these nodes"),
    "no-matmul": gettext_noop("no matmul throughput was measured for this candidate"),
}

PARTS: dict[str, str] = {
    "compute": gettext_noop("compute"), "sync": gettext_noop("gradient sync"),
    "input": gettext_noop("input stall"), "checkpoint": gettext_noop("checkpoint writes")}

COMPUTE_BOUND = gettext_noop("compute bounds the step: nothing else to wait for")
PART_SHARE = gettext_noop("{part}: {share} of the step")
WHAT_IF_CUTS = gettext_noop("{what} would cut the job from {before} h to {after} h")
WHAT_IFS: dict[str, str] = {"accumulation_x4": gettext_noop("4x gradient accumulation"),
                            "packed": gettext_noop("packed data"),
                            "link": gettext_noop("a {rate} GbE link")}
SEPARATOR = gettext_noop("; ")
# A what-if that leaves the job more than this share of its hours is not worth a sentence.
WORTH_NAMING = 0.95


def _same(text: str) -> str:
    return text


@dataclass(frozen=True)
class Skipped:
    """Why a candidate has no estimate: a code of SKIPPED and the values its words name."""

    code: str
    values: dict[str, Any] = field(default_factory=dict)

    def words(self, gettext: Gettext = _same) -> str:
        return gettext(SKIPPED[self.code]).format(**self.values)


def what_if(name: str, gettext: Gettext = _same) -> str:
    if name.startswith("link_") and name.endswith("gbe"):
        return gettext(WHAT_IFS["link"]).format(
            rate=name.removeprefix("link_").removesuffix("gbe"))
    return gettext(WHAT_IFS[name]) if name in WHAT_IFS else name


def summary(e: Mapping[str, Any], number: Callable[[float], str],
            gettext: Gettext = _same) -> str:
    """The bottleneck in a sentence, with the what-if that shortens the job most:
    "gradient sync: 91% of the step; a 10 GbE link would cut the job from 135 h to 18.8 h".
    ``e`` is an estimate as the API gives it (bottleneck, shares, hours, what_ifs)."""
    part = e["bottleneck"]
    if not part:
        return gettext(COMPUTE_BOUND)
    text = gettext(PART_SHARE).format(part=gettext(PARTS.get(part, part)),
                                      share=f"{e['shares'][part]:.0%}")
    best = min(e["what_ifs"], key=lambda w: w["hours"], default=None)
    if best is not None and best["hours"] < e["hours"] * WORTH_NAMING:
        text += gettext(SEPARATOR) + gettext(WHAT_IF_CUTS).format(
            what=what_if(best["name"], gettext), before=number(e["hours"]),
            after=number(best["hours"]))
    return text
