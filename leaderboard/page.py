"""What the pages put on screen, from what the services measured: the board's columns and
winners, the charts with their words, the compare table, readable inventories and profiles.

Words come from leaderboard.words and are translated here, at request time; numbers are
formatted once (charts.number), the same in tables and charts.
"""

from __future__ import annotations

import statistics
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from django.db.models import QuerySet
from django.urls import reverse
from django.utils import timezone
from django.utils.translation import get_language
from django.utils.translation import gettext as _

from certification.models import Certificate, CertificationProfile
from certification.services.criteria import TIER_ORDER
from contract import link_classes, metrics
from fleet.models import Node
from jobs.models import BenchmarkJob, ClusterResult, LinkResult
from leaderboard import charts, stability_page, words
from leaderboard.models import LatestResult
from leaderboard.services import clusters, diagnosis, links, score
from leaderboard.services.ranking import (
    DEFAULT_METRIC,
    Entry,
    Filters,
    Group,
    history,
    node_values,
    profile_for,
)

# The board's candidate columns (a node's own figures; links and clusters have views of
# their own). Only those with a figure among the rows shown appear; the ranked one first.
COLUMN_METRICS = ["network.tcp_throughput", "network.tcp_rtt", "storage.randread_iops",
                  "storage.checkpoint_write", "training.dataloader_samples_per_s",
                  "training.allreduce_busbw", "training.comm_share", "training.samples_per_s",
                  "training.gpu_util_mean"]
HISTORY_METRICS = ["network.tcp_throughput", "network.tcp_rtt", "storage.randread_iops",
                   "storage.checkpoint_write", "training.allreduce_busbw", "training.step_time"]
CLUSTER_METRICS = [clusters.SLOWEST_LINK, "training.allreduce_busbw_largest", "training.step_time",
                   "training.comm_share", "training.samples_per_s"]
RANKING_BARS = 15
COMPARE_MIN, COMPARE_MAX = 2, 4


def figure(value: float | None, metric: str = "") -> str:
    """A value as the tables show it; a ratio as a percentage."""
    if value is None:
        return "–"
    if metric and metrics.METRICS.get(metric) and metrics.METRICS[metric].unit == "ratio" \
            and metric != "training.dataloader_gain":
        return f"{value:.0%}"
    return charts.number(value)


def unit_of(metric: str) -> str:
    if metric == clusters.SLOWEST_LINK:
        return "Gbit/s"
    known = metrics.METRICS.get(metric)
    if known and known.unit == "ratio" and metric != "training.dataloader_gain":
        return "%"
    return words.unit(metric)


def label_of(metric: str) -> str:
    return _("Slowest link") if metric == clusters.SLOWEST_LINK else words.label(metric)


def best_of(values: Sequence[float | None], higher: bool) -> set[int]:
    """Indexes of the best value; equal figures (as shown) share it: a tie is a tie, and
    when every figure is equal nobody is better."""
    known = [(i, v) for i, v in enumerate(values) if v is not None]
    if len(known) < 2:
        return set()
    top = (max if higher else min)(v for _, v in known)
    best = {i for i, v in known if charts.number(v) == charts.number(top)}
    return set() if len(best) == len(known) else best


def all_equal(values: Sequence[float | None]) -> bool:
    shown = {charts.number(v) for v in values if v is not None}
    return len(shown) == 1 and sum(v is not None for v in values) > 1


def metric_choices() -> list[dict[str, str]]:
    return sorted(({"name": m.name, "label": words.label(m.name), "unit": words.unit(m.name)}
                   for m in metrics.METRICS.values() if not m.name.startswith("noop.")),
                  key=lambda c: (c["name"].split(".")[0], c["label"]))


def column(metric: str) -> dict[str, Any]:
    return {"name": metric, "label": label_of(metric), "unit": unit_of(metric),
            "about": words.about(metric), "higher": clusters.higher_is_better(metric)}


def newest_valid(node_ids: Iterable[int] | None = None, limit: int = 500) -> dict[int, Certificate]:
    """Each node's newest valid certificate (of these nodes, or of every node)."""
    found = Certificate.objects.filter(revoked_at__isnull=True, expires_at__gt=timezone.now())
    if node_ids is not None:
        found = found.filter(node_id__in=list(node_ids))
    out: dict[int, Certificate] = {}
    for cert in found.select_related("node__provider", "node__region").order_by("-issued_at")[:limit]:
        out.setdefault(cert.node_id, cert)
    return out


def board_table(board: list[Entry], values: Mapping[int, Mapping[str, float]],
                metric: metrics.Metric) -> dict[str, Any]:
    """The board's columns (with data, the ranked metric first), each row's cells with the
    column winners marked, the ranked metric's p5-p95 spread as a bar on one scale, and its
    stability across the platform's re-tests (a column only once a row has re-tests)."""
    names = [metric.name] + [m for m in COLUMN_METRICS if m != metric.name]
    cells = {m: [values.get(e.row.node_id, {}).get(m) for e in board] for m in names}
    cells[metric.name] = [e.row.value for e in board]
    shown = [m for m in names if any(v is not None for v in cells[m])] or [metric.name]
    winners = {m: best_of(cells[m], clusters.higher_is_better(m)) for m in shown}
    top = max([e.row.p95 or e.row.value for e in board] or [0.0]) or 1.0
    tiers = newest_valid(e.row.node_id for e in board)
    prices = [e.price_per_score for e in board]
    cheapest = best_of(prices, higher=False)
    marks = stability_page.board_marks(board)  # the ranked figure across re-tests
    rows = []
    for i, e in enumerate(board):
        low, high = e.row.p5, e.row.p95
        rows.append({
            "entry": e, "tier": tiers.get(e.row.node_id),
            "cells": [{"text": figure(cells[m][i], m), "best": i in winners[m]} for m in shown],
            "spread": None if low is None or high is None else {
                "left": 100 * low / top, "width": max(1.0, 100 * (high - low) / top),
                "mark": 100 * e.row.value / top, "text": f"{figure(low)}–{figure(high)}"},
            "price_best": i in cheapest, "stability": marks[i],
        })
    return {"columns": [column(m) for m in shown], "table": rows,
            "has_gpu": any(e.row.node.gpu_model for e in board),
            "has_price": any(e.row.node.monthly_price_cny for e in board),
            "has_tier": bool(tiers), "has_stability": stability_page.shown(marks)}


def ranking_chart(board: list[Entry], metric: metrics.Metric) -> str:
    top = board[:RANKING_BARS]
    return charts.bar_chart(
        [charts.Bar(e.row.node.name, e.row.value, e.row.p5, e.row.p95, best=e.rank == 1) for e in top],
        unit_of(metric.name), f"{words.label(metric.name)} ({unit_of(metric.name)})")


def group_label(g: Group) -> str:
    if g.kind == "kind":
        return words.kind(g.key)
    if g.kind == "city":
        return " · ".join(words.place(part) for part in g.name.split(" / "))
    return words.place(g.name)


def group_chart(found: list[Group], metric: metrics.Metric) -> str:
    bars = [charts.Bar(group_label(g), g.median, g.p5, g.p95,
                       " " + _("(%(n)s nodes)") % {"n": g.nodes}) for g in found]
    if bars:  # the better group in the accent colour
        pick = (max if metric.higher_is_better else min)(range(len(bars)), key=lambda i: bars[i].value)
        bars[pick] = charts.Bar(bars[pick].label, bars[pick].value, bars[pick].low, bars[pick].high,
                                bars[pick].note, best=True)
    return charts.bar_chart(bars, unit_of(metric.name),
                            _("median %(metric)s (%(unit)s), p5–p95 across nodes")
                            % {"metric": words.label(metric.name), "unit": unit_of(metric.name)})


Sections = list[tuple[tuple[int, str], list[clusters.ClusterEntry]]]


def price_chart(board: list[Entry], sections: Sections) -> str:
    """Price against score, one point per node with both (a cluster has no score of its own:
    its figures are on its table)."""
    points = [charts.Point(e.row.node.name, float(e.row.node.monthly_price_cny), e.score.value,
                           "node", node_url(e.row.node_id))
              for e in board if e.row.node.monthly_price_cny and e.score.value is not None]
    return charts.scatter_chart(points, _("price (CNY/month)"), _("training readiness score (0–100)"),
                                _("cheap and good"), {"node": _("node")})


def link_chart(found: list[LinkResult]) -> str:
    grid = links.matrix(found)
    return charts.link_matrix([n["name"] for n in grid["nodes"]], [
        charts.LinkCell(li["from_name"], li["to_name"], li["throughput_gbps"], li["rtt_ms"],
                        li["confirmed"], li["agreed"]) for li in grid["links"]],
        charts.MatrixWords(_("sender"), _("receiver"), _("confirmed by both ends"),
                           _("not confirmed by the receiver"),
                           _("both ends agree, but both are the provider's hosts")))


def clusters_within(sections: Sections, filters: Filters) -> Sections:
    """The cluster sections under the board's filters that clusters have too: provider kind,
    provider, GPU model and budget (a cluster's price is its nodes' together)."""
    out = []
    for key, found in sections:
        kept = [e for e in found if within(e, filters)]
        for i, e in enumerate(kept):
            e.rank = i + 1
        if kept:
            out.append((key, kept))
    return out


def within(e: clusters.ClusterEntry, filters: Filters) -> bool:
    provider = e.result.provider
    return ((not filters.provider_kind or (provider is not None and provider.kind == filters.provider_kind))
            and (not filters.provider or (provider is not None
                                          and provider.name.lower() == filters.provider.lower()))
            and (not filters.gpu_model or e.result.gpu_model.lower() == filters.gpu_model.lower())
            and (filters.max_price is None or (e.price_cny_month is not None
                                               and e.price_cny_month <= filters.max_price)))


def node_url(node_id: int) -> str:
    return reverse("node-page", args=[node_id])


def cluster_name(result: ClusterResult) -> str:
    where = " · ".join(x for x in (
        result.provider.name if result.provider else _("mixed providers"),
        words.place(result.region.city) if result.region else _("mixed regions")) if x)
    model = result.gpu_model if result.gpu_model not in ("", "none") else "CPU"
    return f"{where} · {result.size} × {model}"


# --- compare -----------------------------------------------------------------------------

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
    for pk in node_ids:
        if pk not in nodes:
            continue
        n, v = nodes[pk], values.get(pk, {})
        out.append(Candidate("node", pk, n.name, node_url(pk), n.provider.name,
                             words.region(n.region.province, n.region.city), n.monthly_price_cny,
                             dict(v), diagnosis.diagnose(v),
                             score.score(measured.get(pk, {})).value,
                             words.tier(tiers[pk].tier) if pk in tiers else ""))
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
            members=[n.name for n in e.result.nodes.all()]))
    return out


def comparison(found: list[Candidate]) -> dict[str, Any]:
    """One row per metric any candidate has, in the board's order, the winner marked (all of
    them on a tie); then the score and the monthly price with each one's difference from the
    cheapest."""
    order = CLUSTER_METRICS + COLUMN_METRICS + sorted(metrics.METRICS)
    seen = dict.fromkeys(m for m in order if any(m in c.values for c in found))
    rows = []
    for m in seen:
        vals = [c.values.get(m) for c in found]
        wins = best_of(vals, clusters.higher_is_better(m))
        rows.append({"label": label_of(m), "unit": unit_of(m), "about": words.about(m), "metric": m,
                     "cells": [{"text": figure(v, m), "best": i in wins} for i, v in enumerate(vals)],
                     "tie": len(wins) > 1 or all_equal(vals)})
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
    return {"rows": rows,
            "score": [{"text": figure(s), "best": i in wins} for i, s in enumerate(scores)]
            if any(s is not None for s in scores) else [],  # clusters have no score of their own
            "price": price_cells}


# --- node, provider, certification, job ----------------------------------------------------

def metric_rows(latest: QuerySet[LatestResult]) -> list[dict[str, Any]]:
    return [{"row": r, "label": words.label(r.metric), "about": words.about(r.metric),
             "metric": r.metric, "value": figure(r.value, r.metric), "unit": unit_of(r.metric),
             "spread": f"{figure(r.p5, r.metric)}–{figure(r.p95, r.metric)}" if r.p5 is not None else "",
             "runs": f"{figure(r.run_min, r.metric)}–{figure(r.run_max, r.metric)}"}
            for r in latest if r.metric in metrics.METRICS and not r.metric.startswith("noop.")]


def histories(node: Node, viewer: Any = None) -> list[dict[str, Any]]:
    out = []
    for name in HISTORY_METRICS:
        # In the site's time zone, as the tables show dates.
        points = [(timezone.localtime(p["measured_at"]), p["value"])
                  for p in history(node, name, viewer=viewer) if p["measured_at"]]
        if points:
            out.append({"metric": name, "label": words.label(name), "svg": charts.line_chart(
                points, unit_of(name), words.label(name), _("date measured"))})
    return out


def score_parts(values: Mapping[str, float]) -> list[dict[str, Any]]:
    """Each part of the score: its name, the figure it uses, the target, how near (0-100%)."""
    got = score.score(values).parts
    weight = score.weights()
    out = []
    for part in score.PARTS:
        metric = next((m for m in part.metrics if m in values), part.metrics[0])
        share = got.get(part.name)
        out.append({"label": _(part.label), "why": _(part.why), "metric": words.label(metric),
                    "value": figure(values.get(metric), metric), "unit": unit_of(metric),
                    "target": ("≥ " if part.higher_is_better else "≤ ") + figure(part.target, metric),
                    "share": None if share is None else round(100 * share),
                    "weight": charts.number(weight.get(part.name, 0))})
    return out


def _gib(value: Any) -> str:
    return f"{charts.number(value / 2**30)} GiB" if isinstance(value, (int, float)) and value else "–"


def inventory(inv: Any) -> list[tuple[str, str]]:
    """The host's own description of itself, as label/value rows (it is a claim: the
    figures on the page are what was measured)."""
    if not isinstance(inv, dict) or not inv:
        return []
    rows: list[tuple[str, str]] = []
    gpu: dict[str, Any] = inv["gpu"] if isinstance(inv.get("gpu"), dict) else {}
    devices = [d for d in gpu.get("devices", []) if isinstance(d, dict)] if gpu.get("available") else []
    if devices:
        models: dict[str, int] = {}
        for d in devices:
            models[str(d.get("name"))] = models.get(str(d.get("name")), 0) + 1
        rows.append((_("GPUs"), ", ".join(f"{n} × {m}" for m, n in models.items())))
        mem = devices[0].get("memory_bytes")
        rows.append((_("GPU memory (each)"), _gib(mem)))
        pcie = devices[0]
        if pcie.get("pcie_gen"):
            rows.append((_("PCIe link (now / max)"), f"Gen{pcie.get('pcie_gen')} x{pcie.get('pcie_width')}"
                         f" / Gen{pcie.get('pcie_gen_max')} x{pcie.get('pcie_width_max')}"))
        if devices[0].get("nvlinks") is not None:
            rows.append((_("NVLink links"), str(devices[0].get("nvlinks"))))
        rows.append((_("NVIDIA driver"), str(gpu.get("driver") or "–")))
        cuda = gpu.get("cuda_driver")
        # NVML gives the CUDA version the driver supports as 1000 * major + 10 * minor.
        version = f"{cuda // 1000}.{cuda % 1000 // 10}" if isinstance(cuda, int) else "–"
        rows.append((_("CUDA (driver)"), version))
    else:
        rows.append((_("GPUs"), _("none (no NVIDIA GPU found)")))
    rows.append((_("CPU"), f"{inv.get('cpu_model', '–')} · {inv.get('cpu_cores', '–')} "
                 + _("cores")))
    rows.append((_("Memory"), _gib(inv.get("memory_bytes"))))
    nics = [n for n in inv.get("nics", []) if isinstance(n, dict) and n.get("name") != "lo"]
    if nics:
        rows.append((_("Network interfaces"), ", ".join(
            f"{n['name']} ({charts.number(n['speed_mbps'] / 1000)} Gbit/s)" if n.get("speed_mbps")
            else f"{n['name']} ({_('speed not reported')})" for n in nics)))
    disks = [d for d in inv.get("disks", []) if isinstance(d, dict)]
    if disks:
        rows.append((_("Disks"), ", ".join(
            f"{d.get('name')} {_gib(d.get('size_bytes'))} "
            f"{_('HDD') if d.get('rotational') else _('SSD/NVMe')}"
            + (f" ({d['model']})" if d.get("model") else "") for d in disks)))
    rows.append((_("Kernel"), str(inv.get("kernel", "–"))))
    rows.append((_("Python"), str(inv.get("python", "–"))))
    tools: dict[str, Any] = inv["tools"] if isinstance(inv.get("tools"), dict) else {}
    for tool, version in sorted(tools.items()):
        rows.append((str(tool), str(version) if version else _("not installed")))
    return rows


def provider_summary(nodes: list[Node], board: list[Entry], certs: list[Certificate]) -> dict[str, Any]:
    prices = sorted(n.monthly_price_cny for n in nodes if n.monthly_price_cny)
    scores = [e.score.value for e in board if e.score.value is not None]
    tiers: dict[str, int] = {}
    holders: set[int] = set()
    for c in certs:
        if c.valid and c.node_id not in holders:
            holders.add(c.node_id)
            tiers[words.tier(c.tier)] = tiers.get(words.tier(c.tier), 0) + 1
    return {"nodes": len(nodes),
            "regions": sorted({words.region(n.region.province, n.region.city) for n in nodes}),
            "price": (f"{charts.number(prices[0])}–{charts.number(prices[-1])}" if len(prices) > 1
                      and prices[0] != prices[-1] else charts.number(prices[0])) if prices else "–",
            "median_score": charts.number(statistics.median(scores)) if scores else "–",
            "tiers": ", ".join(f"{t} × {n}" for t, n in tiers.items()) or _("none")}


COMPARISONS = {"<": "<", "<=": "≤", ">": ">", ">=": "≥"}


def threshold_text(criterion: Mapping[str, Any]) -> str:
    metric = str(criterion.get("metric"))
    threshold = criterion.get("threshold")
    sign = COMPARISONS.get(str(criterion.get("comparison")), str(criterion.get("comparison")))
    if isinstance(threshold, dict) and "link_class" in threshold:
        n = threshold["link_class"]
        return _("%(sign)s %(value)s Gbit/s (what a %(n)s GbE link measures)") % {
            "sign": sign, "value": charts.number(link_classes.floor(float(n))), "n": charts.number(n)}
    if isinstance(threshold, dict):
        factor = charts.number(threshold.get("factor", 0))
        return f"{sign} {factor} × {words.label(str(threshold.get('metric')))}"
    value = figure(float(threshold), metric) if isinstance(threshold, (int, float)) else str(threshold)
    unit = "" if value.endswith("%") else unit_of(metric)  # a ratio is shown in % already
    return f"{sign} {value} {unit}".rstrip()


def profile_view(profile: CertificationProfile) -> dict[str, Any]:
    zh = (get_language() or "").startswith("zh")
    requires = {"gpu": _("needs an NVIDIA GPU"), "multi_node": _("multi-node jobs only")}
    verified = {"reference": _("checked by the platform's reference endpoint"),
                "host": _("reported by the host, behind consistency checks")}
    return {"profile": profile, "description": (profile.description_zh if zh and profile.description_zh
                                                else profile.description),
            "criteria": [{"metric": c.get("metric"), "label": words.label(str(c.get("metric"))),
                          "threshold": threshold_text(c),
                          "why": c.get("why_zh") if zh and c.get("why_zh") else c.get("why", ""),
                          "requires": requires.get(str(c.get("requires")), ""),
                          "verified_by": verified.get(str(c.get("verified_by")), "")}
                         for c in profile.criteria]}


def certified_nodes() -> list[Certificate]:
    """Every node's newest valid certificate, best tier first."""
    return sorted(newest_valid().values(), key=lambda c: (
        TIER_ORDER.index(c.tier) if c.tier in TIER_ORDER else len(TIER_ORDER), c.node.name))


def job_results(job: BenchmarkJob) -> list[dict[str, Any]]:
    """Each run's figures, by node, with a link to the node's page."""
    out = []
    for run in job.runs.select_related("node").prefetch_related("samples").order_by("node__name"):  # type: ignore[attr-defined]
        samples = sorted(run.samples.all(), key=lambda s: (s.metric, str(s.metadata.get("peer", ""))))
        out.append({"run": run, "node": run.node, "href": node_url(run.node_id),
                    "state": words.state(run.status),
                    "samples": [{"label": words.label(s.metric), "metric": s.metric,
                                 "value": figure(s.value, s.metric), "unit": unit_of(s.metric),
                                 "peer": s.metadata.get("peer", ""),
                                 "spread": f"{figure(s.p5, s.metric)}–{figure(s.p95, s.metric)}"
                                 if s.p5 is not None else ""}
                                for s in samples]})
    return out
