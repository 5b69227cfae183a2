"""What the host's own load during its probes says: an oversold CPU.

Each probe's samples carry the host's CPU shares over the probe (benchmarks/conditions.py,
``metadata["conditions"]``). They are the host's word: shown and named in the diagnosis
("oversold CPU: 14% steal during the storage test"), never used to move a figure, since a
provider could claim load to excuse a slow run. The bound is data
(board/data/conditions.yaml).
"""

from __future__ import annotations

from functools import lru_cache
from pathlib import Path
from typing import Any

from django.utils.translation import gettext as _
from django.utils.translation import gettext_noop

from board import rules
from board.diagnosis import Finding
from board.models import LatestResult
from contract import rules as bounds
from jobs.models import Sample

RULES_FILE = Path(__file__).resolve().parent / "data" / "conditions.yaml"
TESTS = {"network": gettext_noop("network test"), "storage": gettext_noop("storage test"),
         "training": gettext_noop("training test"), "gpu": gettext_noop("GPU test")}


@lru_cache(maxsize=1)
def bound_rules() -> dict[str, bounds.Bound]:
    return bounds.load_bounds(RULES_FILE)


def of_newest_run(node_id: int, profile: str) -> dict[str, dict[str, Any]]:
    """Each probe's conditions (by its family: network, storage, ...) in the node's newest
    run on the board."""
    newest = (LatestResult.objects.filter(node_id=node_id, profile=profile,
                                          evidence=LatestResult.ANY)
              .order_by("-run_id").values_list("run_id", flat=True).first())
    if newest is None:
        return {}
    out: dict[str, dict[str, Any]] = {}
    for metric, metadata in Sample.objects.filter(run_id=newest).values_list("metric", "metadata"):
        found = (metadata or {}).get("conditions")
        family = metric.split(".", 1)[0]
        if isinstance(found, dict) and family in TESTS:
            out.setdefault(family, found)
    return out


def findings(conditions: dict[str, dict[str, Any]]) -> list[Finding]:
    """The probe with the most CPU stolen, when it is past the bound."""
    rule = bound_rules()["steal"]
    stolen = {family: c["cpu_steal"] for family, c in conditions.items()
              if isinstance(c.get("cpu_steal"), (int, float))}
    if not stolen:
        return []
    family, share = max(stolen.items(), key=lambda kv: kv[1])
    if share < rule.value:
        return []
    return [Finding(
        "oversold-cpu",
        _("oversold CPU: %(share)s steal during the %(test)s") % {
            "share": f"{share:.0%}", "test": _(TESTS[family])},
        _("the hypervisor ran other tenants on this node's CPUs: ask the provider for dedicated "
          "vCPUs, or rent bare metal; its figures vary with its neighbours"),
        "conditions.steal",
        rules.why(rule))]
