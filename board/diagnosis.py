"""What bounds training on a node, from its numbers, with the advice that fits.

Each finding is a rule of board/data/rules.yaml (its threshold, why and source) that the
node's latest values (metric -> value) do not meet, worded here with the figures and the
advice that fits. A finding names its rule; the rule's why is given in the page's language.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from functools import lru_cache

from django.utils.translation import get_language
from django.utils.translation import gettext as _

from board import rules
from contract.rules import Rule

Values = Mapping[str, float]


@dataclass(frozen=True)
class Finding:
    code: str
    verdict: str
    advice: str
    rule: str = ""  # the rule of board/data/rules.yaml it breaks ("" for one of its own)
    why: str = ""  # that rule's why, in the request's language
    # The part it names (node:NAME, link:A-B with the ends sorted) and what is wrong with it
    # (slow, lossy, latent), where the finding is about one part of a node set.
    part: str = ""
    kind: str = ""


def broken(name: str, v: Values) -> Rule | None:
    """The diagnosis rule ``name`` when these values break it; None when they meet it or
    cannot be judged by it."""
    rule = rules.diagnosis()[name]
    return rule if rule.holds(v) is False else None


def finding(rule: Rule, verdict: str, advice: str) -> Finding:
    return Finding(rule.name, verdict, advice, f"diagnosis.{rule.name}", rules.why(rule))


def communication_bound(v: Values) -> Finding | None:
    rule = broken("communication-bound", v)
    # A GPU busy for most of the window hides its communication: not a finding then.
    if rule is None or rules.diagnosis()["gpu-busy"].holds(v):
        return None
    util, share = v.get("training.gpu_util_mean"), f"{v['training.comm_share']:.0%}"
    return finding(rule,
                   _("communication takes %(share)s of each step and the GPU is busy only "
                     "%(util)s%%") % {"share": share, "util": f"{util:.0f}"} if util is not None
                   else _("communication takes %(share)s of each step") % {"share": share},
                   _("accumulate gradients over more micro-batches (DDP no_sync) to all-reduce "
                     "less often, or choose nodes with faster interconnect"))


def input_bound(v: Values) -> Finding | None:
    rule = broken("input-bound", v)
    if rule is None:
        return None
    return finding(rule,
                   _("more DataLoader workers read %(gain)sx faster than one process")
                   % {"gain": f"{v['training.dataloader_gain']:.1f}"},
                   _("raise num_workers and prefetch_factor; pack small files into shards; "
                     "cache hot data on tmpfs or local NVMe"))


def small_files(v: Values) -> Finding | None:
    small, packed = v.get("storage.smallfile_read"), v.get("storage.packedfile_read")
    # Both zero (in range, and a host may post it) says nothing; small zero alone is the worst case.
    rule = broken("small-files", v)
    if rule is None or small is None or packed is None or packed <= 0:
        return None
    verdict = (_("many small files read %(ratio)sx slower than the same data packed")
               % {"ratio": f"{packed / small:.1f}"} if small > 0
               else _("many small files read far slower than the same data packed"))
    return finding(rule, verdict, _("pack samples into larger shards (tar/WebDataset, "
                                    "LMDB) or cache them on tmpfs"))


def far_from_region(v: Values) -> Finding | None:
    rule = broken("high-latency", v)
    if rule is None:
        return None
    return finding(rule, _("%(rtt)s ms to its region's reference endpoint")
                   % {"rtt": f"{rule.value(v):.1f}"},
                   _("pick a data centre closer to your data and your other nodes"))


def slow_interconnect(v: Values) -> Finding | None:
    rule = broken("slow-network", v)
    if rule is None:
        return None
    return finding(rule, _("%(gbps)s Gbit/s, under what a 10 GbE link measures "
                           "(%(floor)s Gbit/s), the least multi-node training needs")
                   % {"gbps": f"{rule.value(v):.2f}", "floor": f"{rule.limit():g}"},
                   _("keep training on one node, or ask for 25/100 GbE or RDMA"))


def slow_checkpoints(v: Values) -> Finding | None:
    rule = broken("slow-checkpoints", v)
    if rule is None:
        return None
    return finding(rule, _("checkpoints write at %(gbs)s GB/s")
                   % {"gbs": f"{v['storage.checkpoint_write']:.2f}"},
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
    # Remembered: the same figures get the same findings by the same rules in the same
    # language, and a board page words 100 nodes' findings on every request (#35). The
    # rules are in the key: the rule set as loaded (its file read again is another) and the
    # judges.
    return list(_diagnosed(Loaded(rules.diagnosis()), tuple(RULES), get_language() or "",
                           tuple(sorted(values.items()))))


class Loaded:
    """A loaded rule set in a memo's key: the same only when it is the very same set (it
    holds it, so no other set can take its id while the key lives)."""

    def __init__(self, rule_set: object) -> None:
        self.rule_set = rule_set

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Loaded) and other.rule_set is self.rule_set

    def __hash__(self) -> int:
        return id(self.rule_set)


@lru_cache(maxsize=20_000)
def _diagnosed(_rule_set: Loaded, judges: tuple[Callable[[Values], Finding | None], ...],
               language: str, items: tuple[tuple[str, float], ...]) -> tuple[Finding, ...]:
    values = dict(items)
    findings = []
    for rule in judges:
        try:
            found = rule(values)
        except (ArithmeticError, ValueError, TypeError) as exc:
            found = Finding(UNAVAILABLE, _("the %(rule)s rule could not judge these figures "
                                           "(%(error)s)") % {"rule": rule.__name__,
                                                             "error": exc.__class__.__name__}, "")
        if found is not None:
            findings.append(found)
    return tuple(findings)
