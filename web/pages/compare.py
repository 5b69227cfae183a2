"""/compare/: two to four nodes or clusters side by side, the winner of each row, the
diagnosis of each and the difference in price; with a job, its estimate on each."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from django.http import HttpRequest, HttpResponse
from django.shortcuts import render
from django.utils.translation import gettext as _

from board import clusters, diagnosis, score, site_figures, stability_board
from board.estimate_board import Selection
from board.models import ClusterResult
from board.ranking import (
    DEFAULT_METRIC,
    EVIDENCE_CHOICES,
    Filters,
    gpu_unmeasured,
    node_values,
    profile_for,
)
from contract import metrics
from contract.areas import AREAS, area_of
from fleet.models import Node
from jobs.models import Site
from web import charts, my_site, stability_page, words
from web.page import (
    COLUMN_METRICS,
    all_equal,
    best_of,
    cluster_name,
    figure,
    label_of,
    newest_valid,
    node_url,
    unit_of,
)
from web.pages import estimate as estimates
from web.pages import verdict

COMPARE_MIN, COMPARE_MAX = 2, 4


CLUSTER_METRICS = [clusters.SLOWEST_LINK, "training.allreduce_busbw_largest", "training.step_time",
                   "training.comm_share", "training.samples_per_s"]


@dataclass
class Candidate:
    kind: str  # node or cluster
    pk: int
    name: str
    href: str
    provider: str
    region: str
    price: int | None
    values: dict[str, float]
    findings: list[diagnosis.Finding]
    score: float | None = None
    tier: str = ""
    members: list[str] = field(default_factory=list)
    gpu: str = ""  # the GPU model enrolled, in words: "A100", "A100 (GPU not measured)", "–"
    # The board figure across the platform's re-tests at different hours (#32 item 6): the
    # board's mark (verdict, badge, the worst hour against the best); a cluster has none.
    stability: dict[str, Any] = field(default_factory=dict)


# The figure whose stability across the day the compare page shows: the link to the
# region's reference, the one the platform's re-tests measure at random hours.
STABILITY_METRIC = "network.tcp_throughput"


def _ids(query: Any, key: str) -> list[int]:
    raw = query.getlist(key) if hasattr(query, "getlist") else [query.get(key, "")]
    out = []
    for chunk in raw:
        for part in str(chunk).split(","):
            part = part.strip()
            if part:
                if not part.isdigit() or len(part) > 12:
                    raise ValueError(part[:24])
                out.append(int(part))
    return list(dict.fromkeys(out))


def compare_ids(query: Any) -> tuple[list[int], list[int], str]:
    try:
        node_ids, cluster_ids = _ids(query, "nodes"), _ids(query, "clusters")
    except ValueError as exc:
        return [], [], _("“%(value)s” is not a node or cluster id: give numbers, as in "
                         "/compare/?nodes=1,2,3") % {"value": exc}
    count = len(node_ids) + len(cluster_ids)
    if not COMPARE_MIN <= count <= COMPARE_MAX:
        return [], [], _("Pick two to four nodes or clusters to compare (you picked %(n)s): tick "
                         "them on the leaderboard, or open /compare/?nodes=1,2") % {"n": count}
    return node_ids, cluster_ids, ""


def candidates(node_ids: list[int], cluster_ids: list[int]) -> list[Candidate]:
    out = []
    profile = profile_for(Filters(metric=DEFAULT_METRIC))
    nodes = {n.pk: n for n in Node.objects.filter(pk__in=node_ids, status=Node.Status.ACTIVE)
             .select_related("provider", "region")}
    values = node_values(list(nodes), profile, "any")
    measured = node_values(list(nodes), profile)  # what the score stands on
    tiers = newest_valid(nodes)
    stable = stability_board.figures(list(nodes), [STABILITY_METRIC]) if nodes else {}
    paused = stability_page.pauses_now(list(nodes)) if nodes else {}
    for pk in node_ids:
        if pk not in nodes:
            continue
        n, v = nodes[pk], values.get(pk, {})
        out.append(Candidate("node", pk, n.name, node_url(pk), n.provider.name,
                             words.region(n.region.province, n.region.city), n.monthly_price_cny,
                             dict(v), diagnosis.diagnose(v),
                             score.score(measured.get(pk, {})).value,
                             words.tier(tiers[pk].tier) if pk in tiers else "",
                             gpu=gpu_words(n, v),
                             stability=stability_page.mark(
                                 STABILITY_METRIC, stable.get(pk, {}).get(STABILITY_METRIC),
                                 paused.get(pk))))
    found = {c.pk: c for c in ClusterResult.objects.filter(pk__in=cluster_ids, offer=True)
             .select_related("provider", "region").prefetch_related("nodes")}
    for pk in cluster_ids:
        if pk not in found:
            continue
        e = clusters.entry(found[pk])
        figures = {m: f["value"] for m, f in e.figures.items() if isinstance(f, dict)}
        if e.result.slowest_link_gbps is not None:
            figures[clusters.SLOWEST_LINK] = e.result.slowest_link_gbps
        out.append(Candidate("cluster", pk, cluster_name(e.result), "",
                             e.result.provider.name if e.result.provider else "", words.region(
            e.result.region.province, e.result.region.city) if e.result.region else "",
            e.price_cny_month, figures, e.findings,
            members=[n.name for n in e.result.nodes.all()], gpu=e.result.gpu_model or "–"))
    return out


def gpu_words(node: Node, values: dict[str, float]) -> str:
    """The GPU the node enrolled; "GPU not measured" beside it when no GPU figure of its own
    is on the board (a CPU's stand-in never counts as one)."""
    if not node.claims_gpu:
        return "–"
    if gpu_unmeasured(node, values):
        return _("%(model)s (GPU not measured)") % {"model": node.gpu_model}
    return node.gpu_model


def comparison(found: list[Candidate]) -> dict[str, Any]:
    """One row per metric any candidate has, grouped by area (network, data loading,
    storage, training, GPU), in the board's order within each, the winner marked (all of
    them on a tie); one line per candidate saying where it wins and where it trails; then
    the score and the monthly price with each one's difference from the cheapest."""
    order = CLUSTER_METRICS + COLUMN_METRICS + sorted(metrics.METRICS)
    seen = dict.fromkeys(m for m in order if any(m in c.values for c in found))
    rank = {key: i for i, (key, _label, _test) in enumerate(AREAS)}
    rows = []
    for m in sorted(seen, key=lambda m: rank[area_of(m)]):  # stable: the board's order within
        vals = [c.values.get(m) for c in found]
        higher = clusters.higher_is_better(m)
        wins = best_of(vals, higher)
        tie = len(wins) > 1 or all_equal(vals)
        rows.append({"label": label_of(m), "unit": unit_of(m), "about": words.about(m), "metric": m,
                     "area": area_of(m),
                     "cells": [{"text": figure(v, m), "best": i in wins} for i, v in enumerate(vals)],
                     "tie": tie, "worst": set() if tie else best_of(vals, not higher)})
    groups = [{"key": key, "label": _(label), "rows": [r for r in rows if r["area"] == key]}
              for key, label, _test in AREAS]
    scores = [c.score for c in found]
    prices = [float(c.price) if c.price else None for c in found]
    cheapest = min((p for p in prices if p), default=None)
    price_cells = []
    for p in prices:
        diff = "" if p is None or cheapest is None or p == cheapest else f" (+{charts.number(p - cheapest)})"
        price_cells.append({"text": (charts.number(p) + diff) if p else "–", "best": False})
    for i in best_of(prices, higher=False):
        price_cells[i]["best"] = True
    wins = best_of(scores, higher=True)
    marks = [c.stability for c in found]
    return {"rows": rows, "groups": [g for g in groups if g["rows"]],
            "lines": [standing(c, i, rows) for i, c in enumerate(found)],
            "gpu": [c.gpu for c in found],
            "stability": marks if stability_page.shown([m for m in marks if m]) else [],
            "score": [{"text": figure(s), "best": i in wins} for i, s in enumerate(scores)]
            if any(s is not None for s in scores) else [],  # clusters have no score of their own
            "price": price_cells}

def standing(c: Candidate, i: int, rows: list[dict[str, Any]]) -> dict[str, str]:
    """Where one candidate wins and where it trails, by area: "best on network (4 of 5),
    storage (2 of 6); last on data loading (2 of 2)"."""
    def counted(key: str) -> list[str]:
        out = []
        for area, label, _test in AREAS:
            mine = [r for r in rows if r["area"] == area and not r["tie"]
                    and r["cells"][i]["text"] not in ("", "–")]
            n = sum(1 for r in mine if (r["cells"][i]["best"] if key == "best" else i in r["worst"]))
            if n:
                out.append(_("%(area)s (%(n)s of %(of)s)") % {"area": _(label).lower(), "n": n,
                                                            "of": len(mine)})
        return out
    best, last = counted("best"), counted("worst")
    parts = []
    if best:
        parts.append(_("best on %(areas)s") % {"areas": ", ".join(best)})
    if last:
        parts.append(_("last on %(areas)s") % {"areas": ", ".join(last)})
    return {"name": c.name, "href": c.href,
            "text": _("; ").join(parts) or _("no figure apart from the others")}


def from_site(site: Site, found: list[Candidate]) -> list[dict[str, Any]]:
    """The buyer's own site's figures of each compared node, the best of each row marked;
    a node the site never probed says so, a cluster has no figure of its own from it."""
    mine = site_figures.by_node(site)
    out = []
    for key, label, unit, higher in (("rtt_ms", _("RTT from my site"), "ms", False),
                                     ("upload_gbps", _("Upload from my site"), "Gbit/s", True),
                                     ("download_gbps", _("Download to my site"), "Gbit/s", True)):
        probed = [mine.get(c.pk) if c.kind == "node" else None for c in found]
        values = [p.get(key) if p else None for p in probed]
        wins = best_of(values, higher)
        out.append({"key": key, "label": label, "unit": unit, "cells": [
            {"text": figure(v), "best": i in wins, "probed": p is not None, "kind": c.kind}
            for i, (c, p, v) in enumerate(zip(found, probed, values, strict=True))]})
    return out


def compare_page(request: HttpRequest) -> HttpResponse:
    """Two to four nodes or clusters side by side: per metric, the winner of each row, the
    diagnosis of each and the difference in price."""
    node_ids, cluster_ids, problem = compare_ids(request.GET)
    site = my_site.chosen(request)  # the reader's own (anyone else's: a 404)
    status = 400 if problem else 200
    found = [] if problem else candidates(node_ids, cluster_ids)
    if not problem and len(found) < len(node_ids) + len(cluster_ids):
        problem, status = _("Some of these nodes or clusters do not exist (or are no longer listed)."), 404
    table = comparison(found) if found and not problem else None
    # With a preset and steps, the buyer's own job estimated on each candidate as well.
    job_rows, job_problem, job = None, "", None
    if table and estimates.wants_estimate(request.GET):
        try:
            job = estimates.compare_job(request.GET, [len(c.members) for c in found
                                                      if c.kind == "cluster"], request.user)
            job_rows = estimates.compare_rows(job, node_ids, cluster_ids,
                                              [(c.kind, c.pk) for c in found])
        except estimates.BadJob as exc:
            job_problem, status = exc.message, 400
    # It ends with the verdict among these candidates: for the buyer's job, or by default
    # multi-node data-parallel training (each node as N of its kind).
    answer = None
    if table and not job_problem:
        evidence = job.evidence if job else str(request.GET.get("evidence") or "")
        answer = verdict.box(job.workload if job else verdict.default_job(), Selection(
            nodes=tuple(node_ids), clusters=tuple(cluster_ids),
            evidence=evidence if evidence in EVIDENCE_CHOICES else ""),
            job.rank_by if job else "cost")
    return render(request, "web/compare.html", {
        "candidates": found, "comparison": table, "problem": problem,
        "estimate": job_rows, "estimate_problem": job_problem, "verdict": answer,
        "job_form": estimates.form(request.GET, nodes_key="job_nodes",
                                   sites=my_site.choices(request)),
        "node_ids": ",".join(map(str, node_ids)), "cluster_ids": ",".join(map(str, cluster_ids)),
        "site": site, "from_site": from_site(site, found) if site and table else [],
        "my_sites": my_site.choices(request),
    }, status=status)

