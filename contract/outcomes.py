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

from contract.numbers import hour_spans


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
    "input": gettext_noop("input stall"), "checkpoint": gettext_noop("checkpoint writes"),
    "staging": gettext_noop("data staging")}

# Moving the data from the buyer's site (board/staging.py), said after the bottleneck.
STAGING: dict[str, str] = {
    "stream": gettext_noop(
        "streaming from your {site} adds {seconds} s a step: copy the data once ({copy_hours} h) "
        "or rent nearer to it"),
    # The candidate is outside the province of the site: where to rent instead, by name.
    "stream-elsewhere": gettext_noop(
        "streaming from your {site} adds {seconds} s a step: copy the data once ({copy_hours} h) "
        "or rent in {province}"),
    "copy-once": gettext_noop(
        "copying {gb} GB from your {site} takes {copy_hours} h before the job starts"),
    "unknown": gettext_noop(
        "data staging from your {site} is unknown: no probe from it reached this candidate "
        "(benchctl probe --site)")}

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


def by_hour(c: Mapping[str, Any], number: Callable[[float], str],
            gettext: Gettext = _same) -> str:
    """A multi-node job's hours at its links' worst and best hours of the day ("" when the
    answer has none: one node, or nodes never re-tested across the day). ``c`` is a
    candidate as the API gives it."""
    ends = c.get("by_hour") or {}
    if "worst" not in ends or "best" not in ends:
        return ""
    worst, best = ends["worst"], ends["best"]
    return gettext(BY_HOUR).format(
        worst_hours=number(worst["hours"]), worst=hour_spans(worst["hours_of_day"]),
        best_hours=number(best["hours"]), best=hour_spans(best["hours_of_day"]))


def summary(e: Mapping[str, Any], number: Callable[[float], str],
            gettext: Gettext = _same) -> str:
    """The bottleneck in a sentence, with the what-if that shortens the job most:
    "gradient sync: 91% of the step; a 10 GbE link would cut the job from 135 h to 18.8 h".
    ``e`` is an estimate as the API gives it (bottleneck, shares, hours, what_ifs)."""
    part = e["bottleneck"]
    moved = staging_words(e.get("staging") or {}, number, gettext)
    if not part:
        return gettext(COMPUTE_BOUND) + (gettext(SEPARATOR) + moved if moved else "")
    if part == "staging" and moved:
        return moved  # the sentence names the stall, and what to do instead
    text = gettext(PART_SHARE).format(part=gettext(PARTS.get(part, part)),
                                      share=f"{e['shares'][part]:.0%}")
    best = min(e["what_ifs"], key=lambda w: w["hours"], default=None)
    if best is not None and best["hours"] < e["hours"] * WORTH_NAMING:
        text += gettext(SEPARATOR) + gettext(WHAT_IF_CUTS).format(
            what=what_if(best["name"], gettext), before=number(e["hours"]),
            after=number(best["hours"]))
    return text + (gettext(SEPARATOR) + moved if moved else "")


def staging_words(s: Mapping[str, Any], number: Callable[[float], str],
                  gettext: Gettext = _same) -> str:
    """The data's way from the buyer's site in a sentence ("" when it is on the node)."""
    if not s.get("code"):
        return ""
    values = {k: number(v) if isinstance(v, (int, float)) and not isinstance(v, bool) else v
              for k, v in (s.get("values") or {}).items()}
    if values.get("province"):  # a place name: in the reader's language (contract/places.py)
        values["province"] = gettext(values["province"])
    return gettext(STAGING[s["code"]]).format(**values)


# --- the verdict: which candidates to rent for the job, and which to avoid -----------------
# A pick or an avoided candidate as the API gives it (board/verdict.py: verdict_data) is
# worded here, in the reader's language, from its codes and figures.

PICK = gettext_noop("{name} ({provider}, {region}): {hours} h and {cost} CNY for the job, "
                    "{step} s a step")
PICK_NO_PRICE = gettext_noop("{name} ({provider}, {region}): {hours} h for the job, {step} s "
                             "a step, no price stated")
BY_HOUR = gettext_noop("{worst_hours} h at its links' worst hours ({worst}), {best_hours} h at "
                       "their best ({best})")
AT_WORST_HOURS = gettext_noop("at its worst hours ({hours_of_day}) {hours} h, {summary}")
EVIDENCE: dict[str, str] = {
    "platform-verified": gettext_noop("figures verified by the platform"),
    "buyer-measured": gettext_noop("figures measured by a buyer's trial agent"),
    "host-reported": gettext_noop("figures the provider's host reported"),
    "datasheet": gettext_noop("compute from the GPU's datasheet")}
STABILITY: dict[str, str] = {
    "stable": gettext_noop("stable over the day"),
    "varies-by-hour": gettext_noop("slower at {hours_of_day}"),
    "varies": gettext_noop("varies between re-tests"),
    "not-enough-data": gettext_noop("not yet re-tested across the day")}
CHECKS: dict[str, str] = {
    "host-reported": gettext_noop(
        "its figures are its provider's own: measure them with a trial agent first"),
    "datasheet": gettext_noop(
        "its GPU was not measured (the compute is its datasheet's): run the GPU check in a trial"),
    "modelled": gettext_noop(
        "no {copies} of its nodes were measured together: run a {copies}-node training job "
        "in a trial"),
    "not-enough-data": gettext_noop("re-test it at the hours you will train"),
    "varies-by-hour": gettext_noop(
        "ask whether its bandwidth is dedicated, or train outside {hours_of_day}"),
    "unmeasured": gettext_noop("{parts} not measured: counted as nothing"),
    "no-price": gettext_noop("ask its provider for a price")}
CHECK_FIRST = gettext_noop("check first: {checks}")
# Between the pick's figures and what to check: a full stop, in the reader's script.
SENTENCE_END = gettext_noop(". ")
AVOID: dict[str, str] = {
    "slow-link": gettext_noop(
        "{name}: its link runs at {gbps} Gbit/s, gradient sync would be {share} of the step"),
    "slower": gettext_noop(
        "{name}: {hours} h for the job against {best_hours} h on {best}; {summary}"),
    "costlier": gettext_noop(
        "{name}: {cost} CNY for the job against {best_cost} CNY on {best}; {summary}")}
NO_CANDIDATE = gettext_noop(
    "no candidate has the figures this job needs: see why each was skipped")


def pick_sentence(p: Mapping[str, Any], number: Callable[[float], str],
                  gettext: Gettext = _same) -> str:
    """One candidate in a sentence: "hz-a100-01 (West Lake DC, Hangzhou): 12.5 h and 428 CNY
    for the job, 4.5 s a step; compute bounds the step...; figures verified by the platform;
    stable over the day. check first: ..."."""
    c, e = p["candidate"], p["candidate"]["estimate"]
    # The city in the reader's language where the answer names it (older answers: the code).
    region = gettext(c["city"]) if c.get("city") else c["region"] or "-"
    place = {"name": c["name"], "provider": c["provider"] or "-", "region": region,
             "hours": number(e["hours"]), "step": number(e["step_s"])}
    text = (gettext(PICK).format(**place, cost=number(e["cost_cny"]))
            if e["cost_cny"] is not None else gettext(PICK_NO_PRICE).format(**place))
    worst = p.get("worst")
    if worst:
        text += gettext(SEPARATOR) + gettext(AT_WORST_HOURS).format(
            hours_of_day=hour_spans(worst["hours_of_day"]), hours=number(worst["hours"]),
            summary=summary(worst, number, gettext))
    text += gettext(SEPARATOR) + summary(e, number, gettext)
    evidence = EVIDENCE.get(p["evidence"])
    if evidence:
        text += gettext(SEPARATOR) + gettext(evidence)
    text += gettext(SEPARATOR) + gettext(STABILITY[p["stability"]]).format(
        hours_of_day=hour_spans((worst or {}).get("hours_of_day") or p.get("worst_hours") or []))
    if p["checks"]:
        text += gettext(SENTENCE_END) + gettext(CHECK_FIRST).format(checks=gettext(SEPARATOR).join(
            check_words(k, number, gettext) for k in p["checks"]))
    return text


def check_words(check: Mapping[str, Any], number: Callable[[float], str],
                gettext: Gettext = _same) -> str:
    values = dict(check.get("values") or {})
    if "hours_of_day" in values:
        values["hours_of_day"] = hour_spans(values["hours_of_day"])
    if "parts" in values:
        values["parts"] = ", ".join(gettext(PARTS.get(x, x)) for x in values["parts"])
    return gettext(CHECKS[check["code"]]).format(**values)


def avoid_sentence(p: Mapping[str, Any], number: Callable[[float], str],
                   gettext: Gettext = _same) -> str:
    """Why not this one: "sz-h800-02: its link runs at 0.19 Gbit/s, gradient sync would be 94%
    of the step"."""
    reason, c = p["reason"], p["candidate"]
    v = dict(reason.get("values") or {})
    worded = {k: number(x) if isinstance(x, (int, float)) and not isinstance(x, bool) else x
              for k, x in v.items()}
    if "share" in v:
        worded["share"] = f"{v['share']:.0%}"
    if c.get("estimate"):
        worded["summary"] = summary(c["estimate"], number, gettext)
    return gettext(AVOID[reason["code"]]).format(name=c["name"], **worded)
