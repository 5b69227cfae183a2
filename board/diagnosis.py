"""What bounds training on a node, from its numbers, with the advice that fits.

Each rule is a small function of the node's latest values (metric -> value) that returns a
finding or None. Thresholds are the field's rules of thumb, also used by certification.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass

from django.utils.translation import gettext as _

from contract import link_classes

Values = Mapping[str, float]
# Distributed training wants at least a 10 GbE link between nodes (a nominal class).
MULTI_NODE_CLASS = 10.0


@dataclass(frozen=True)
class Finding:
    code: str
    verdict: str
    advice: str


def communication_bound(v: Values) -> Finding | None:
    util, comm = v.get("training.gpu_util_mean"), v.get("training.comm_share")
    if comm is None or comm <= 0.30:
        return None
    if util is not None and util >= 80:
        return None
    share = f"{comm:.0%}"
    return Finding("communication-bound",
                   _("communication takes %(share)s of each step and the GPU is busy only "
                     "%(util)s%%") % {"share": share, "util": f"{util:.0f}"} if util is not None
                   else _("communication takes %(share)s of each step") % {"share": share},
                   _("accumulate gradients over more micro-batches (DDP no_sync) to all-reduce "
                     "less often, or choose nodes with faster interconnect"))


def input_bound(v: Values) -> Finding | None:
    gain = v.get("training.dataloader_gain")
    if gain is None or gain < 1.5:
        return None
    return Finding("input-bound",
                   _("more DataLoader workers read %(gain)sx faster than one process")
                   % {"gain": f"{gain:.1f}"},
                   _("raise num_workers and prefetch_factor; pack small files into shards; "
                     "cache hot data on tmpfs or local NVMe"))


def small_files(v: Values) -> Finding | None:
    small, packed = v.get("storage.smallfile_read"), v.get("storage.packedfile_read")
    # Both zero (in range, and a host may post it) says nothing; small zero alone is the worst case.
    if small is None or packed is None or packed <= 0 or packed < 2 * small:
        return None
    verdict = (_("many small files read %(ratio)sx slower than the same data packed")
               % {"ratio": f"{packed / small:.1f}"} if small > 0
               else _("many small files read far slower than the same data packed"))
    return Finding("small-files", verdict, _("pack samples into larger shards (tar/WebDataset, "
                                             "LMDB) or cache them on tmpfs"))


def far_from_region(v: Values) -> Finding | None:
    rtt = v.get("network.tcp_rtt", v.get("network.icmp_rtt_avg"))
    if rtt is None or rtt <= 10:
        return None
    return Finding("high-latency", _("%(rtt)s ms to its region's reference endpoint")
                   % {"rtt": f"{rtt:.1f}"},
                   _("pick a data centre closer to your data and your other nodes"))


def slow_interconnect(v: Values) -> Finding | None:
    gbps = v.get("network.internode_throughput", v.get("network.tcp_throughput"))
    if gbps is None or link_classes.reaches(gbps, MULTI_NODE_CLASS):
        return None
    return Finding("slow-network", _("%(gbps)s Gbit/s, under what a 10 GbE link measures "
                                     "(%(floor)s Gbit/s), the least multi-node training needs")
                   % {"gbps": f"{gbps:.2f}", "floor": f"{link_classes.floor(MULTI_NODE_CLASS):g}"},
                   _("keep training on one node, or ask for 25/100 GbE or RDMA"))


def slow_checkpoints(v: Values) -> Finding | None:
    gbs = v.get("storage.checkpoint_write")
    if gbs is None or gbs >= 0.5:
        return None
    return Finding("slow-checkpoints", _("checkpoints write at %(gbs)s GB/s") % {"gbs": f"{gbs:.2f}"},
                   _("write checkpoints to local NVMe and copy them off asynchronously, or "
                     "checkpoint less often"))


RULES: list[Callable[[Values], Finding | None]] = [
    communication_bound, input_bound, small_files, far_from_region, slow_interconnect,
    slow_checkpoints,
]


UNAVAILABLE = "unavailable"


def diagnose(values: Values) -> list[Finding]:
    """Every rule's finding. A rule that cannot judge these values (a bug, or figures no
    rule foresaw) says so as its own finding: one node's odd figures never take a page down."""
    findings = []
    for rule in RULES:
        try:
            found = rule(values)
        except (ArithmeticError, ValueError, TypeError) as exc:
            found = Finding(UNAVAILABLE, _("the %(rule)s rule could not judge these figures "
                                           "(%(error)s)") % {"rule": rule.__name__,
                                                             "error": exc.__class__.__name__}, "")
        if found is not None:
            findings.append(found)
    return findings
