"""The composite "training readiness" score: 0-100, from the metrics that decide how fast
distributed training runs on a node.

Each part scores 0..1 against a target from the field's rules of thumb (1 = at or past the
target), and the score is the weighted mean of the parts the node has, times 100. Weights
are configuration (settings.SCORE_WEIGHTS); a part the node has no figure for is left out
and shown as missing, so the score says how much of it was measured.

The callers give it measured figures only (platform-verified or buyer-measured: the
evidence ladder), and there is no score until every core part is measured: a node that
held back a slow part (or has only its host's word for it) must not score on the rest.

    part = min(1, value / target)        when higher is better
    part = min(1, target / value)        when lower is better
    score = 100 * sum(w_i * part_i) / sum(w_i)   over the parts present
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from django.conf import settings
from django.utils.translation import gettext_noop

from contract import link_classes


@dataclass(frozen=True)
class Part:
    name: str
    metrics: tuple[str, ...]  # the first one present is used
    target: float
    higher_is_better: bool
    why: str  # marked for translation; the pages translate it when shown
    label: str = ""
    # Every host has it, GPU or not, one node or many: no score without it.
    core: bool = False


# Not a metric: the worst hour's share of the best hour's median across the platform's
# re-tests (board/stability_board.score_figure), when it has a verdict.
STABILITY = "stability.hour_ratio"

PARTS = [
    # A node's own figures only: its links and clusters are judged on their own boards.
    Part("bandwidth", ("network.tcp_throughput",),
         link_classes.floor(10.0), True,
         gettext_noop("a 10 GbE link between nodes for distributed training (9 Gbit/s measured)"),
         gettext_noop("Bandwidth"), core=True),
    Part("latency", ("network.tcp_rtt", "network.icmp_rtt_avg"), 5.0,
         False, gettext_noop("RTT under 5 ms is good; over 10 ms needs a better path"),
         gettext_noop("Latency"), core=True),
    Part("busbw", ("training.allreduce_busbw",), 1.25, True,
         gettext_noop("all-reduce bus bandwidth at 10 Gbit/s line rate (1.25 GB/s)"),
         gettext_noop("All-reduce bandwidth")),
    Part("comm_share", ("training.comm_share",), 0.30, False,
         gettext_noop("communication share over 30%: common and costly"),
         gettext_noop("Communication share")),
    Part("iops", ("storage.randread_iops",), 100_000.0, True,
         gettext_noop("4k random read IOPS of local NVMe"),
         gettext_noop("Storage IOPS"), core=True),
    Part("checkpoint", ("storage.checkpoint_write",), 1.0, True, gettext_noop("checkpoint writes at 1 GB/s"),
         gettext_noop("Checkpoint writes"), core=True),
    Part("data_loading", ("training.dataloader_samples_per_s",), 2_000.0, True,
         gettext_noop("an input pipeline that keeps a GPU fed (2,000 samples/s)"),
         gettext_noop("Data loading")),
    Part("gpu_utilisation", ("training.gpu_util_mean",), 80.0, True,
         gettext_noop("GPU busy for at least 80%, over the training window"),
         gettext_noop("GPU utilisation")),
    Part("stability", (STABILITY,), 0.8, True,
         gettext_noop("the worst hour of the day at no less than four fifths of the best, "
                      "across the platform's re-tests"),
         gettext_noop("Stability over the day")),
]

# Stability counts only when an operator weights it (SCORE_WEIGHTS="stability=2"): scores
# stay comparable with those before re-tests existed.
DEFAULT_WEIGHTS = {"bandwidth": 3.0, "latency": 2.0, "busbw": 3.0, "comm_share": 2.0,
                   "iops": 1.0, "checkpoint": 1.0, "data_loading": 1.0, "gpu_utilisation": 2.0,
                   "stability": 0.0}


def weights() -> dict[str, float]:
    return {**DEFAULT_WEIGHTS, **getattr(settings, "SCORE_WEIGHTS", {})}


@dataclass(frozen=True)
class Score:
    value: float | None  # None: nothing measured, or a core part missing
    parts: dict[str, float | None]  # part -> 0..1, None when not measured
    missing: tuple[str, ...] = ()  # the core parts with no measured figure

    def as_dict(self) -> dict[str, object]:
        return {"value": self.value, "parts": self.parts, "missing": list(self.missing)}


def part_score(part: Part, value: float) -> float:
    if part.higher_is_better:
        return min(1.0, max(0.0, value / part.target)) if part.target > 0 else 1.0
    return 1.0 if value <= 0 else min(1.0, part.target / value)


def score(values: Mapping[str, float]) -> Score:
    """The score of one node from its latest measured value per metric."""
    w = weights()
    parts: dict[str, float | None] = {}
    total = weight = 0.0
    for part in PARTS:
        metric = next((m for m in part.metrics if m in values), None)
        if metric is None or w.get(part.name, 0) <= 0:
            parts[part.name] = None
            continue
        s = part_score(part, values[metric])
        parts[part.name] = round(s, 4)
        total += w[part.name] * s
        weight += w[part.name]
    missing = tuple(p.name for p in PARTS if p.core and w.get(p.name, 0) > 0
                    and parts[p.name] is None)
    value = round(100 * total / weight, 1) if weight and not missing else None
    return Score(value, parts, missing)
