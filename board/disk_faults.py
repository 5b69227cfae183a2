"""Which node's disk is slow, from one job's storage figures: the part ``disk:NAME``, kind slow.

The nodes of one job were measured the same way at the same time (one suite, one set of
parameters), so a disk whose 4k random reads (fio, ``storage.randread_iops``) run far under
every other node's of that job is the slow part: a throttled or network volume, a worn or
lesser device. A gap is a finding only beyond a margin of its run-to-run spread (the two
figures' standard errors, from their repetitions' CV), and only for a node with repeated
figures beside two peers at least. The bounds, with their why and source, are data
(board/data/disk_faults.yaml).

A host is an adversary, and its figures are its claims: a node is named only when it is
under *every* peer of the job, so a peer that inflates its own figure cannot get an honest
node named while one other honest peer stands beside it; and figures are only ever
compared within one job, never with another job's or the board's.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from django.db.models.functions import Coalesce
from django.utils.translation import gettext as _

from board import rules
from board.diagnosis import Finding
from contract import rules as bounds
from jobs.models import Run, Sample

RULES_FILE = Path(__file__).resolve().parent / "data" / "disk_faults.yaml"
METRIC = "storage.randread_iops"
RULE = "slow_share"


BOUNDS = bounds.BoundFile(RULES_FILE)


def bound_rules() -> dict[str, bounds.Bound]:
    return BOUNDS.bounds


def limits() -> dict[str, float]:
    return BOUNDS.numbers


@dataclass(frozen=True)
class Figure:
    """A node's random-read IOPS in one job: the median of ``n`` repetitions, their CV."""
    node: str
    value: float
    n: int
    cv: float | None

    @property
    def spread(self) -> float:
        """Its repetitions' standard deviation (CV x median; 0 when the CV is unknown)."""
        return (self.cv or 0.0) * self.value

    @property
    def error(self) -> float:
        """How far its figure may be from the disk's own: the standard error of ``n``
        repetitions (their standard deviation over the square root of n)."""
        return self.spread / math.sqrt(max(self.n, 1))


def spread(mine: Figure, peer: Figure) -> float:
    """The run-to-run spread of the gap between two figures: their standard errors combined
    (Welch's). Two repetitions of 2 s of a healthy peer's fio here differ by up to a third
    (CV 0.35, measured beside three other hosts): the larger standard deviation alone,
    tripled, held back every gap under the whole of such a peer's figure."""
    return math.hypot(mine.error, peer.error)


def slower(mine: Figure, peer: Figure) -> bool:
    b = limits()
    return (mine.value < b["slow_share"] * peer.value
            and peer.value - mine.value > b["margin_spreads"] * spread(mine, peer))


def findings(figures: Sequence[Figure]) -> list[Finding]:
    """Each node whose disk is slower than every peer's (one figure per node: a later one
    of the same node replaces an earlier)."""
    b = limits()
    judged = list({f.node: f for f in figures
                   if f.n >= b["min_repetitions"] and f.value >= 0}.values())
    out = []
    for mine in sorted(judged, key=lambda f: f.node):
        peers = [p for p in judged if p.node != mine.node]
        if len(peers) >= b["min_peers"] and all(slower(mine, p) for p in peers):
            out.append(finding(mine, min(peers, key=lambda p: p.value)))
    return out


def finding(mine: Figure, nearest: Figure) -> Finding:
    """Worded with the figures the rule stood on: the node's, its nearest peer's (the
    slowest of the others, the one it was furthest from being named against), and the
    spread of the gap between the two."""
    rule = bound_rules()[RULE]
    numbers = {"name": mine.node, "mine": f"{mine.value:,.0f}", "peer": f"{nearest.value:,.0f}",
               "share": f"{mine.value / nearest.value:.0%}" if nearest.value else "-",
               "bound": f"{rule.value:.0%}", "spread": f"{spread(mine, nearest):,.0f}",
               "margin": f"{limits()['margin_spreads']:g}"}
    verdict = _("%(name)s: its disk reads %(mine)s random 4 KiB blocks a second (fio), "
                "%(share)s of the slowest of its peers in this job (%(peer)s): under "
                "%(bound)s of every peer, by more than %(margin)s times the gap's run-to-run "
                "spread (%(spread)s)") % numbers
    advice = _("ask the provider what holds %(name)s's data directory (local NVMe, a network "
               "or shared volume, an I/O limit) and re-test it: data loading and checkpoints "
               "wait on it") % numbers
    return Finding("slow-disk", verdict, advice, f"disk_faults.{rule.name}", rules.why(rule),
                   part=f"disk:{mine.node}", kind="slow")


def job_figures(job_id: int) -> list[Figure]:
    """The job's nodes' random-read figures, from its succeeded runs' samples, oldest
    first. A trial agent's figure is named by the node it measures."""
    rows = (Sample.objects.filter(run__job_id=job_id, run__status=Run.Status.SUCCEEDED,
                                  metric=METRIC)
            .order_by("id")
            .values_list(Coalesce("run__node__trial_of__name", "run__node__name"), "value", "n",
                         "cv"))
    return [Figure(str(name), float(value), int(n), cv) for name, value, n, cv in rows]


def job_findings(job_id: int) -> list[Finding]:
    return findings(job_figures(job_id))
