"""benchctl estimate: what a buyer's own training job would take and cost on each candidate.

The platform does the arithmetic (POST /api/v1/estimates; the model is
board/estimate.py) from each candidate's board figures. This module turns the
command line into the request, and the answer into rows: for people, the ranked candidates
with the bottleneck in a sentence of their own language and marks on figures that are a CPU's
or missing, then the skipped candidates with their reason; for machines, the raw numbers.
"""

from __future__ import annotations

import argparse
from typing import TYPE_CHECKING, Any

from contract import outcomes
from workers.buyer import display
from workers.errors import CliError
from workers.i18n import _, gettext_noop

if TYPE_CHECKING:
    from workers.buyer.client import Client

PATH = "/api/v1/estimates"
RANK_BY = {"cost": gettext_noop("cost"), "time": gettext_noop("time")}


# --- the request ---------------------------------------------------------------------------

def body(args: argparse.Namespace) -> dict[str, Any]:
    """The request for the parsed command line; CliError names the flag to fix."""
    picked = {"nodes": ids("--candidate-nodes", args.candidate_nodes),
              "clusters": ids("--clusters", args.clusters)}
    filters = {"region": args.region, "provider": args.provider, "gpu_model": args.gpu_model,
               "max_price": args.max_price}
    if any(picked.values()) and any(v is not None for v in filters.values()):
        # The platform would estimate the ids and drop the filters without a word.
        raise CliError(_("--candidate-nodes and --clusters name the candidates, --region, "
                         "--provider, --gpu-model and --max-price pick them from the board: "
                         "give one or the other"))
    return {"workload": workload(args), "rank_by": args.rank_by,
            **{k: v for k, v in picked.items() if v},
            **{k: v for k, v in filters.items() if v is not None}}


def workload(args: argparse.Namespace) -> dict[str, Any]:
    explicit = {"params": args.params, "train_flops_per_sample": args.flops_per_sample,
                "global_batch": args.global_batch}
    if not args.preset and any(v is None for v in explicit.values()):
        raise CliError(_("say what the job trains: --preset NAME (e.g. gpt2-medium), or all of "
                         "--params, --flops-per-sample and --global-batch"))
    if (args.checkpoint_gb is None) != (args.checkpoint_every is None):
        raise CliError(_("--checkpoint-gb and --checkpoint-every go together: the size of one "
                         "checkpoint and the steps between two"))
    given = {"preset": args.preset, **explicit, "steps": args.steps, "nodes": args.nodes,
             "gpus_per_node": args.gpus_per_node, "accumulation": args.accumulation,
             "precision": args.precision, "checkpoint_gb": args.checkpoint_gb,
             "checkpoint_interval": args.checkpoint_every}
    if args.data_site is not None:
        if not args.dataset_gb:
            raise CliError(_("--data-site needs --dataset-gb: how much data the job reads "
                             "from it"))
        given |= {"data_at": "site", "site": args.data_site}
    if args.dataset_gb is not None:
        given |= {"dataset_gb": args.dataset_gb, "data_use": args.data_use}
    if args.small_files:
        given["packed"] = False
    if args.cpu_only:
        given["cpu_only"] = True
    return {k: v for k, v in given.items() if v is not None}


def ids(flag: str, text: str | None) -> list[int]:
    """"3,4" or "3 4" -> [3, 4]."""
    try:
        return [int(n) for n in (text or "").replace(",", " ").split()]
    except ValueError:
        raise CliError(_("{flag} {value}: write ids, e.g. {flag} 3,4").format(
            flag=flag, value=repr(text))) from None


def ask(client: Client, request: dict[str, Any]) -> dict[str, Any]:
    page: dict[str, Any] = client.call("POST", PATH, json=request)
    return page


# --- the answer ----------------------------------------------------------------------------

def title(page: dict[str, Any]) -> str:
    w = page["workload"]
    return _("{workload}: {steps} steps on {nodes} node(s) with {gpus} GPU(s) each, ranked by "
             "{order}").format(workload=w["name"], steps=display.number(w["steps"]),
                               nodes=w["nodes"], gpus=w["gpus_per_node"],
                               order=_(RANK_BY.get(page["rank_by"], page["rank_by"])))


def ranked_rows(page: dict[str, Any]) -> list[dict[str, Any]]:
    """The estimated candidates, best first, as a person reads them."""
    return [{"rank": c["rank"], "candidate": c["name"], "provider": c["provider"],
             "region": c["region"], "step_s": c["estimate"]["step_s"],
             "hours": c["estimate"]["hours"], "cost_cny": c["estimate"]["cost_cny"],
             "bottleneck": summary(c["estimate"]), "notes": notes(c)}
            for c in page["results"] if c["estimate"] is not None]


def skipped_rows(page: dict[str, Any]) -> list[dict[str, Any]]:
    return [{"candidate": c["name"], "provider": c["provider"], "region": c["region"],
             "reason": reason(c)} for c in page["results"] if c["estimate"] is None]


def rows(page: dict[str, Any]) -> list[dict[str, Any]]:
    """Every candidate with the raw numbers (JSON, CSV): the skipped ones with empty figures."""
    out = []
    # Data staging is a part only of a job whose data is at a site: a column only then.
    staged = any("staging" in ((c["estimate"] or {}).get("parts_s") or {})
                 for c in page["results"])
    shown = [p for p in outcomes.PARTS if p != "staging" or staged]
    for c in page["results"]:
        e = c["estimate"] or {}
        parts = e.get("parts_s") or {}
        out.append({"rank": c["rank"], "kind": c["kind"], "id": c["id"], "name": c["name"],
                    "provider": c["provider"], "region": c["region"],
                    "nodes": ",".join(n["name"] for n in c["nodes"]),
                    "price_cny_month": c["price_cny_month"], "step_s": e.get("step_s"),
                    **{f"{part}_s": parts.get(part) for part in shown},
                    "hours": e.get("hours"), "cost_cny": e.get("cost_cny"),
                    "bottleneck": e.get("bottleneck"), "summary": summary(e) if e else "",
                    "on_cpu": c["on_cpu"], "unmeasured": ",".join(e.get("unmeasured", [])),
                    "skipped": reason(c) if c["estimate"] is None else ""})
    return out


def summary(e: dict[str, Any]) -> str:
    """The bottleneck in a sentence, with the what-if that shortens the job most, worded
    here from the answer's figures (contract/outcomes.py, as the platform words them): the
    answer's own summary is in the platform's language."""
    return outcomes.summary(e, display.number, _)


def reason(c: dict[str, Any]) -> str:
    """Why a candidate was skipped, worded from its code in benchctl's language; a code this
    benchctl does not know (a newer platform) shows the platform's own words."""
    code = c.get("skipped_code")
    if code not in outcomes.SKIPPED:
        return str(c["skipped"])
    return outcomes.Skipped(code, c.get("skipped_values") or {}).words(_)


def notes(c: dict[str, Any]) -> str:
    """What a figure in the row stands on that a buyer should know before trusting it."""
    found = []
    if c["on_cpu"]:
        found.append(_("compute is a CPU's figure"))
    if c["estimate"]["unmeasured"]:
        found.append(_("not measured, counted as 0: {parts}").format(parts=_(", ").join(
            _(outcomes.PARTS.get(p, p)) for p in c["estimate"]["unmeasured"])))
    if c["estimate"]["cost_cny"] is None:
        found.append(_("no price"))
    hours = outcomes.by_hour(c, display.number, _)
    if hours:
        found.append(hours)
    return _("; ").join(found)
