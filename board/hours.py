"""A multi-node job at the worst and at the best hour of the day (#32 item 6).

The platform's re-tests time a node's bandwidth at many hours (board/stability_board.py). A
job across nodes syncs its gradients over their links, so its hours depend on the hour it
runs at: the estimate states both ends. Each hour's share is the node's median at that hour
against the board's figure of the same metric (what the estimate timed the job on: the
median of its recent runs, whatever hours they ran at); a candidate of several nodes is as
fast as its slowest node at that hour. A one-node job has no link in its step: its hours are
the same at every hour, and nothing is stated.
"""

from __future__ import annotations

import statistics
from dataclasses import dataclass, replace

from board import estimate
from board.estimate import Estimate, Measured, Workload
from board.stability import NOT_ENOUGH, Stability, worst_hours

WORST, BEST = "worst", "best"


@dataclass
class AtHours:
    """The job at the hours of the day its links are slowest (worst) or fastest (best)."""

    hours_of_day: list[int]
    share: float  # the link at those hours against its board figure
    estimate: Estimate


def shares(days: list[tuple[Stability, float | None]]) -> dict[int, float]:
    """hour of the day -> the candidate's link share then: of each node's re-tests at that
    hour against its board figure (``days``: each node's stability and board figure), the
    slowest node's; a node not re-tested at that hour counts as its board figure."""
    per_node = []
    for s, board in days:
        if s.verdict != NOT_ENOUGH and s.by_hour and board:
            per_node.append({h: v / board for h, v in s.by_hour.items()})
    hours = sorted({h for node in per_node for h in node})
    return {h: min(node.get(h, 1.0) for node in per_node) for h in hours}


def at_hours(workload: Workload, figures: Measured | None,
             days: list[tuple[Stability, float | None]]) -> dict[str, AtHours]:
    """The job re-timed with its link at the worst and at the best hours; empty for a
    one-node job, a candidate without a link figure, or one never re-tested across the day."""
    if workload.nodes < 2 or figures is None or not figures.busbw_curve:
        return {}
    by_hour = shares(days)
    if len(by_hour) < 2:
        return {}
    # The worst hours as the stability verdict names them (the worst quarter of the range);
    # the best hours are the worst of a figure where lower is better.
    ends = {WORST: worst_hours(by_hour, higher_is_better=True),
            BEST: worst_hours(by_hour, higher_is_better=False)}
    out = {}
    for kind, hours in ends.items():
        share = statistics.median(by_hour[h] for h in hours)
        out[kind] = AtHours(hours, share, estimate.estimate(workload, scaled(figures, share)))
    return out


def scaled(figures: Measured, share: float) -> Measured:
    """The figures with the link (and the all-reduce over it) at ``share`` of its own."""
    return replace(figures, busbw_curve=[(s, b * share) for s, b in figures.busbw_curve],
                   link_gbps=figures.link_gbps * share if figures.link_gbps else None)
