"""Which part of a node set is bad, from its links: a node or one link; slow, lossy or latent.

A fault shows on every link that passes through it. A node's slow NIC, its lost packets or
its added latency make all of its links bad while the links among the other nodes are fine;
a bad path between two nodes makes that pair's links bad and nothing else. So, per kind, a
node is named when every link it takes part in is bad against the links it does not touch
(pairwise re-testing, as NCCL's and the hyperscalers' node checks isolate a bad NIC), and
otherwise each link that is bad against the links of the other pairs. A gap is a finding
only beyond a margin of the figure's run-to-run spread, so noise is not one. The bounds, with
their why and source, are data (board/data/link_faults.yaml).

The figures: a link's throughput (its sender's repetitions give its CV), the retransmits its
sender's OS counted per GB sent, and its TCP round trip. Latency is judged only between
nodes of one region: between two cities the round trip is the distance's, not a fault.
"""

from __future__ import annotations

import bisect
import math
import statistics
from collections import defaultdict
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from fractions import Fraction
from pathlib import Path

from django.utils.translation import gettext as _

from board import rules
from board.diagnosis import Finding
from board.models import LinkResult
from contract import rules as bounds

RULES_FILE = Path(__file__).resolve().parent / "data" / "link_faults.yaml"


BOUNDS = bounds.BoundFile(RULES_FILE)


def bound_rules() -> dict[str, bounds.Bound]:
    return BOUNDS.bounds


def limits() -> dict[str, float]:
    return BOUNDS.numbers


@dataclass(frozen=True)
class Gap:
    """One link's figure against the reference (the median of the links compared with it)."""
    link: LinkResult
    value: float
    reference: float


@dataclass(frozen=True)
class Reference:
    """What a part's links are judged against: the other links' median and spread."""
    median: float
    spread: float  # their standard deviation (0 under two links)


class Pool:
    """One kind's figures over every judged link, from which the reference of any part (all
    links but that part's) is taken without going over every link again: the median by rank
    in the sorted figures, the spread from their sums, kept exact (Fractions: a float sum of
    squares loses a small spread beside large figures, 0 and 9,000 retransmits). A board
    judges thousands of links, one node and one pair at a time; going over all of them for
    each was quadratic."""

    def __init__(self, values: list[float]) -> None:
        self.sorted = sorted(values)
        exact = [Fraction(v) for v in values]
        self.total = sum(exact, Fraction(0))
        self.squares = sum((v * v for v in exact), Fraction(0))

    def without(self, removed: list[float]) -> Reference | None:
        """The reference of the figures but ``removed`` (each one of them); None if none
        is left."""
        n = len(self.sorted) - len(removed)
        if n <= 0:
            return None
        skipped: list[int] = []  # the removed figures' places in the sorted list, ascending
        for v in sorted(removed):
            place = bisect.bisect_left(self.sorted, v)
            skipped.append(max(place, skipped[-1] + 1) if skipped else place)

        def at(rank: int) -> float:  # the rank-th (from 0) of the figures left
            for place in skipped:
                if place > rank:
                    break
                rank += 1
            return self.sorted[rank]

        median = (at((n - 1) // 2) + at(n // 2)) / 2
        if n < 2:
            return Reference(median, 0.0)
        exact = [Fraction(v) for v in removed]
        mean = (self.total - sum(exact, Fraction(0))) / n
        variance = (self.squares - sum((v * v for v in exact), Fraction(0))
                    - n * mean * mean) / (n - 1)
        return Reference(median, math.sqrt(variance))


@dataclass(frozen=True)
class Kind:
    name: str  # the finding's kind: slow, lossy, latent
    rule: str  # its bound in board/data/link_faults.yaml
    read: Callable[[LinkResult], float | None]
    # (the link, its value, the reference of the links it is judged against) -> is it bad
    bad: Callable[[LinkResult, float, Reference], bool]
    between_regions: bool = True  # judged on links between regions too


def slow(link: LinkResult, value: float, ref: Reference) -> bool:
    b = limits()
    # The link's own repetitions' spread, or its peers' spread, whichever is wider.
    noise = max((link.throughput_cv or 0.0) * ref.median, ref.spread)
    return value < b["slow_share"] * ref.median and ref.median - value > b["margin_spreads"] * noise


def lossy(link: LinkResult, value: float, ref: Reference) -> bool:
    b = limits()
    return value > max(b["lossy_per_gb"], b["lossy_factor"] * ref.median,
                       ref.median + b["margin_spreads"] * ref.spread)


def latent(link: LinkResult, value: float, ref: Reference) -> bool:
    b = limits()
    return value - ref.median > max(b["latent_ms"], b["margin_spreads"] * ref.spread)


KINDS = (
    Kind("slow", "slow_share", lambda li: li.throughput_gbps, slow),
    Kind("lossy", "lossy_per_gb", lambda li: li.retransmits_per_gb, lossy),
    Kind("latent", "latent_ms", lambda li: li.rtt_ms, latent, between_regions=False),
)


def findings(links: Sequence[LinkResult]) -> list[Finding]:
    """Per kind, the node that explains its bad links, else each bad link; a link that
    touches a node named for any kind is that node's (a latent node's links may retransmit
    more too, on some of them: the node is the part to name, not those links)."""
    judged = {kind.name: [li for li in links if kind.read(li) is not None
                          and (kind.between_regions
                               or li.source.region_id == li.target.region_id)]
              for kind in KINDS}
    nodes = {kind.name: bad_node(kind, judged[kind.name]) for kind in KINDS}
    named = {found[0] for found in nodes.values() if found}
    out: list[Finding] = []
    for kind in KINDS:
        found = nodes[kind.name]
        out += [node_finding(kind, *found)] if found else [
            link_finding(kind, gap) for gap in bad_links(kind, judged[kind.name])
            if not named & set(ends(gap.link))]
    return out


def ends(link: LinkResult) -> tuple[str, str]:
    return link.source.name, link.target.name


def value(kind: Kind, link: LinkResult) -> float:
    read = kind.read(link)
    assert read is not None  # judged links have the figure
    return read


def bad_node(kind: Kind, links: list[LinkResult]) -> tuple[str, list[Gap]] | None:
    """The node all of whose links (two at least) are bad against the links it does not
    touch; of several, the one furthest from its reference."""
    pool = Pool([value(kind, li) for li in links])
    touching: dict[str, list[LinkResult]] = defaultdict(list)
    for li in links:
        for name in ends(li):
            touching[name].append(li)
    found: list[tuple[float, str, list[Gap]]] = []
    for name in sorted(touching):
        mine = touching[name]
        ref = pool.without([value(kind, li) for li in mine]) if len(mine) >= 2 else None
        if ref is None:
            continue
        if all(kind.bad(li, value(kind, li), ref) for li in mine):
            gaps = [Gap(li, value(kind, li), ref.median) for li in mine]
            found.append((abs(statistics.median(g.value for g in gaps) - ref.median), name,
                          gaps))
    if not found:
        return None
    _distance, name, gaps = max(found, key=lambda f: f[0])
    return name, gaps


def bad_links(kind: Kind, links: list[LinkResult]) -> list[Gap]:
    """Links bad against the links of the other pairs (both directions of the pair left out:
    a bad path makes both bad)."""
    pool = Pool([value(kind, li) for li in links])
    pairs: dict[frozenset[str], list[float]] = defaultdict(list)
    for li in links:
        pairs[frozenset(ends(li))].append(value(kind, li))
    refs = {pair: pool.without(values) for pair, values in pairs.items()}
    gaps = []
    for li in links:
        ref = refs[frozenset(ends(li))]
        if ref is not None and kind.bad(li, value(kind, li), ref):
            gaps.append(Gap(li, value(kind, li), ref.median))
    return gaps


def node_finding(kind: Kind, name: str, gaps: list[Gap]) -> Finding:
    mine, others = statistics.median(g.value for g in gaps), gaps[0].reference
    numbers = {"name": name, "mine": figure(kind, mine), "others": figure(kind, others)}
    rule = bound_rules()[kind.rule]
    if kind.name == "slow":  # (`_` is gettext here)
        verdict = _("%(name)s: its links run at %(mine)s of the others' %(others)s Gbit/s")
        advice = _("test the cluster without %(name)s, or ask the provider to check its NIC, "
                   "cabling and switch port")
    elif kind.name == "lossy":
        verdict = _("%(name)s: its links retransmit %(mine)s segments per GB sent, the others "
                    "%(others)s")
        advice = _("ask the provider to check %(name)s's NIC, cable and switch port for errors "
                   "(ethtool -S, the switch's counters): loss cuts TCP's rate, the more so the "
                   "longer the path")
    else:
        verdict = _("%(name)s: its round trips take %(mine)s ms, the others' %(others)s ms")
        advice = _("ask the provider where %(name)s is and how it is reached: that much more "
                   "round trip is another building, a software gateway or a full queue, and "
                   "all-reduce waits on it every step")
    return Finding(f"{kind.name}-node", verdict % numbers, advice % numbers,
                   f"link_faults.{rule.name}", rules.why(rule), part=f"node:{name}",
                   kind=kind.name)


def link_finding(kind: Kind, gap: Gap) -> Finding:
    source, target = ends(gap.link)
    rule = bound_rules()[kind.rule]
    numbers = {"source": source, "target": target, "value": figure(kind, gap.value),
               "median": figure(kind, gap.reference)}
    if kind.name == "slow":
        verdict = _("%(source)s -> %(target)s runs at %(gbps)s of the cluster's median "
                    "%(median)s Gbit/s") % (numbers | {"gbps": numbers["value"]})
        advice = _("re-test that pair; if it stays slow, the path between them (switch, "
                   "route) is the bottleneck")
    elif kind.name == "lossy":
        verdict = _("%(source)s -> %(target)s retransmits %(value)s segments per GB sent, "
                    "the cluster's median %(median)s") % numbers
        advice = _("re-test that pair; if it stays lossy, the path between them (cable, "
                   "switch port, route) drops packets")
    else:
        verdict = _("%(source)s -> %(target)s: round trip %(value)s ms, the cluster's median "
                    "%(median)s ms") % numbers
        advice = _("re-test that pair; if its round trip stays long, its route takes a "
                   "detour (tracepath shows where)")
    return Finding(f"{kind.name}-link", verdict, advice, f"link_faults.{rule.name}",
                   rules.why(rule), part="link:" + "-".join(sorted((source, target))),
                   kind=kind.name)


def figure(kind: Kind, x: float) -> str:
    if kind.name == "lossy":
        return f"{x:,.0f}"
    return f"{x:.2f}"
