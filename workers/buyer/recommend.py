"""benchctl recommend: where to rent for a training job, and why; and where not to.

The platform decides (GET /api/v1/recommendations; board/verdict.py) and answers in codes
and figures; this module words them in benchctl's language from the same templates the
platform uses (contract/outcomes.py), so the verdict reads alike on the page and here.
"""

from __future__ import annotations

import argparse
from typing import TYPE_CHECKING, Any

from contract import outcomes
from workers.buyer import display
from workers.buyer.estimate import reason
from workers.i18n import _

if TYPE_CHECKING:
    from workers.buyer.client import Client

PATH = "/api/v1/recommendations"


def query(args: argparse.Namespace) -> dict[str, Any]:
    given = {"preset": args.preset, "steps": args.steps, "nodes": args.nodes,
             "gpus_per_node": args.gpus_per_node, "region": args.region,
             "provider": args.provider, "gpu_model": args.gpu_model,
             "max_price": args.max_price, "rank_by": args.rank_by, "evidence": args.evidence}
    if args.cpu_only:
        given["cpu_only"] = "true"
    return {k: v for k, v in given.items() if v is not None}


def ask(client: Client, params: dict[str, Any]) -> dict[str, Any]:
    page: dict[str, Any] = client.call("GET", PATH, params=params)
    return page


def words(p: dict[str, Any]) -> str:
    """A pick or an avoided candidate in benchctl's language; the platform's own sentence
    where the answer holds a code this benchctl does not know (a newer platform)."""
    known = (p["reason"] is None or p["reason"]["code"] in outcomes.AVOID) and all(
        k["code"] in outcomes.CHECKS for k in p["checks"]) and p["stability"] in outcomes.STABILITY
    if not known:
        return str(p["text"])
    if p["reason"] is not None:
        return outcomes.avoid_sentence(p, display.number, _)
    return outcomes.pick_sentence(p, display.number, _)


def lines(page: dict[str, Any]) -> list[str]:
    w = page["workload"]
    out = [_("Where to rent {workload} ({steps} steps on {nodes} node(s) with {gpus} GPU(s) "
             "each):").format(workload=w["name"], steps=display.number(w["steps"]),
                              nodes=w["nodes"], gpus=w["gpus_per_node"])]
    if not page["picks"]:
        out.append("  " + _(outcomes.NO_CANDIDATE))
    out += [f"  {i}. {words(p)}" for i, p in enumerate(page["picks"], start=1)]
    if page["avoid"]:
        out.append(_("Avoid:"))
        out += [f"  - {words(p)}" for p in page["avoid"]]
    if page["unknown"]:
        out.append(_("Not enough figures:"))
        out += [f"  - {c['name']}: {reason(c)}" for c in page["unknown"]]
    return out
