"""Candidates ranked by what a buyer's own training job would take and cost on them.

A candidate is what the job would run on: one node (a one-node job) or a cluster measured
together (a job on N nodes: its DDP and all-reduce figures belong to that node set). Its
figures are the board's, never a run's own claim: node figures are the node's board values
(ranked runs only, the median of its recent runs), cluster figures its newest ranked
result, the busbw curve read from the run that timed the collectives. They are of the
board's evidence class: by default measured (platform-verified or buyer-measured), so a
host's typed figures estimate nothing unless the buyer asks for `evidence=any`; each
candidate says the lowest rung it stands on. A candidate that lacks a figure the job needs
is listed as skipped, with the reason; none is filled in.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, NamedTuple

from django.utils.translation import gettext as _

from board import clusters, estimate, hours, site_figures, stability_board
from board.estimate import Estimate, Measured, Workload
from board.hours import AtHours
from board.latest import lowest
from board.models import ClusterResult, LatestResult
from board.ranking import Filters, evidence_class, filtered, metric_of, ordering, profile_for
from board.stability import Stability
from config.errors import Invalid
from contract import gpu_models, outcomes
from contract.numbers import number
from contract.outcomes import Skipped
from fleet.models import Node
from jobs.models import Sample
from jobs.services.consistency import BUSBW_SLACK

RANK_BY = ("cost", "time")
MAX_CANDIDATES = 50
MATMUL = {"fp32": "gpu.matmul_tflops_fp32", "bf16": "gpu.matmul_tflops_bf16",
          "fp16": "gpu.matmul_tflops_bf16"}  # fp16 runs on the same tensor cores as bf16
NODE_FIGURES = {"loader_samples_per_s": "training.dataloader_samples_per_s",
                "small_files_per_s": "storage.smallfile_read",
                "packed_files_per_s": "storage.packedfile_read",
                "checkpoint_gbs": "storage.checkpoint_write"}
BUSBW = "training.allreduce_busbw"
MODELLED_LINK = "network.tcp_throughput"  # an offer's link: what the reference measured
BUCKET_MIB = 25
# Below host-reported on the evidence ladder: the enrolled GPU model's published figure,
# where no GPU figure of the node was measured.
DATASHEET = "datasheet"
MIB = 2**20


class BadCandidates(Invalid, ValueError):
    default_field = "candidates"


@dataclass
class Candidate:
    kind: str  # "node" or "cluster"
    id: int
    name: str
    provider: str
    region: str
    nodes: list[dict[str, Any]]
    price_cny_month: int | None
    profile: str = ""
    on_cpu: bool = False
    estimate: Estimate | None = None
    skipped: Skipped | None = None  # why no estimate: the figure the candidate lacks
    rank: int = 0
    sources: dict[str, str] = field(default_factory=dict)  # figure -> the record it came from
    evidence: str = Sample.HOST_REPORTED  # the lowest rung among the figures it stands on
    # A node offered as N of its kind for an N-node job: no N of its nodes were measured
    # together, so its all-reduce is modelled on its own link (MODELLED_LINK).
    copies: int = 1
    modelled: bool = False
    figures: Measured | None = None  # what its estimate stands on (the verdict re-times it)
    # Its nodes' links over the day (the re-tests'), and a multi-node job at their worst
    # and best hours of the day (board.hours).
    days: list[Stability] = field(default_factory=list)
    # The region's city as enrolled (in English): what the verdict's sentences name, in the
    # reader's language (the code, "hangzhou", was shown on Chinese pages and in benchctl).
    city: str = ""
    province: str = ""  # its region's, as enrolled: where the data staging says to rent
    links: dict[int, float] = field(default_factory=dict)  # node -> its board MODELLED_LINK
    by_hour: dict[str, AtHours] = field(default_factory=dict)


@dataclass(frozen=True)
class Selection:
    """Which candidates: ids, or the board's filters (region, provider, GPU model, budget)."""

    nodes: tuple[int, ...] = ()
    clusters: tuple[int, ...] = ()
    region: str = ""
    provider: str = ""
    gpu_model: str = ""
    max_price: int | None = None
    profile: str = ""
    # The board's evidence class (ranking.EVIDENCE_CHOICES): empty is measured, figures the
    # platform verified or a buyer's trial agent measured; "any" estimates on claims too.
    evidence: str = ""
    # A multi-node job's candidates include each node as N of its kind (the verdict's
    # offers): its gradient sync modelled from its own measured link, and said to be. The
    # estimate API keeps to node sets measured together.
    offers: bool = False


def rank(workload: Workload, selection: Selection, rank_by: str = "cost") -> list[Candidate]:
    """Every candidate estimated, the estimated ones first (cheapest or fastest), then the
    skipped. Under ``cost`` a candidate without a price ranks after the priced ones: having
    no price never makes a node look free."""
    if rank_by not in RANK_BY:
        raise BadCandidates(f"rank_by must be one of {', '.join(RANK_BY)}", field="rank_by")
    clusters.grades(selection.evidence)  # an unknown class is a 400 before any work
    found = ([*picked_nodes(workload, selection), *picked_clusters(workload, selection)]
             if selection.nodes or selection.clusters else board_candidates(workload, selection))
    board = board_values(found, selection.evidence)
    for c in found:
        if c.skipped is None:
            try:
                c.figures = measured(c, workload, selection.evidence, board)
                c.estimate = estimate.estimate(workload, c.figures)
            except estimate.Unestimable as exc:
                c.skipped = exc.skipped
    timed_by_hour(workload, [c for c in found if c.estimate is not None])

    def key(c: Candidate) -> tuple[Any, ...]:
        e = c.estimate
        if e is None:
            return (2, 0.0, c.name)
        if rank_by == "cost":
            return (0, e.cost_cny, c.name) if e.cost_cny is not None else (1, e.hours, c.name)
        return (0, e.hours, c.name)

    found.sort(key=key)
    for i, c in enumerate(found, start=1):
        c.rank = i if c.estimate is not None else 0
    return found


def timed_by_hour(workload: Workload, found: list[Candidate]) -> None:
    """Each candidate's link over the day from the platform's re-tests of its nodes (one
    query for them all), and a multi-node job at its links' worst and best hours."""
    if not found:
        return
    days = stability_board.figures({n["id"] for c in found for n in c.nodes}, [MODELLED_LINK])
    for c in found:
        c.days = [days[n["id"]][MODELLED_LINK] for n in c.nodes]
        c.by_hour = hours.at_hours(workload, c.figures, [
            (s, c.links.get(n["id"])) for s, n in zip(c.days, c.nodes, strict=True)])


# --- which candidates ----------------------------------------------------------------------

def picked_nodes(workload: Workload, selection: Selection) -> list[Candidate]:
    nodes = {n.pk: n for n in Node.objects.filter(pk__in=selection.nodes, status=Node.Status.ACTIVE)
             .select_related("provider", "region")}
    out = []
    for pk in selection.nodes:
        if pk not in nodes:
            raise BadCandidates(f"no active node {pk}", field="nodes")
        c = node_candidate(nodes[pk], selection.profile)
        if workload.nodes > 1:
            if selection.offers:
                offered(c, workload)
            else:
                c.skipped = Skipped("needs-cluster", {"nodes": workload.nodes})
        out.append(c)
    return out


def picked_clusters(workload: Workload, selection: Selection) -> list[Candidate]:
    found = {r.pk: r for r in ClusterResult.objects.filter(pk__in=selection.clusters)
             .select_related("provider", "region").prefetch_related("nodes")}
    out = []
    for pk in selection.clusters:
        result = found.get(pk)
        if result is None:
            raise BadCandidates(f"no cluster {pk}", field="clusters")
        c = cluster_candidate(result)
        # Only what ranks can stand behind a buyer's decision: a custom-parameter job (a
        # provider's hand-tuned run) or a cluster that mixes providers is not an offer.
        if not (result.offer and result.ranked):
            c.skipped = Skipped("not-an-offer")
        elif result.grade not in clusters.grades(selection.evidence):
            c.skipped = Skipped("host-reported-cluster")
        elif result.size != workload.nodes:
            c.skipped = Skipped("cluster-size", {"size": result.size, "nodes": workload.nodes})
        out.append(c)
    return out


def board_candidates(workload: Workload, selection: Selection) -> list[Candidate]:
    out = []
    if workload.nodes == 1 or selection.offers:
        # The board's own filters over the nodes on the board (every host has a TCP
        # throughput figure, GPU or not): one without the compute figure the job needs is
        # listed as skipped, saying why; a GPU enrolled but not measured counts at its
        # datasheet's figure (gpu_compute).
        filters = Filters(metric=MODELLED_LINK, region=selection.region,
                          provider=selection.provider, gpu_model=selection.gpu_model,
                          max_price=selection.max_price, evidence=selection.evidence)
        profile = selection.profile or profile_for(filters)
        # The board's best MAX_CANDIDATES on its link figure, in the board's own order: the
        # index's order, where the first by name sorted every node for 50 (61 ms at 10,000
        # nodes, against 2 ms, #35).
        rows = (filtered(filters, profile, stand_ins=True)
                .order_by(*ordering(metric_of(MODELLED_LINK)))[:MAX_CANDIDATES])
        out = [node_candidate(row.node, profile) for row in rows]
        if workload.nodes == 1:
            return out
        for c in out:
            offered(c, workload)
    for _section, entries in clusters.board(size=workload.nodes, gpu_model=selection.gpu_model or None,
                                            region=selection.region, profile=selection.profile,
                                            evidence=selection.evidence):
        for e in entries:
            if selection.provider and (e.result.provider is None or e.result.provider.name.lower()
                                       != selection.provider.lower()):
                continue
            if selection.max_price is not None and (e.price_cny_month is None
                                                    or e.price_cny_month > selection.max_price):
                continue
            out.append(cluster_candidate(e.result))
    return out[:MAX_CANDIDATES]


def offered(c: Candidate, workload: Workload) -> None:
    """A node as the N nodes of its kind an N-node job rents: N times its price."""
    c.copies, c.modelled = workload.nodes, True
    if c.price_cny_month is not None:
        c.price_cny_month *= workload.nodes


def node_candidate(node: Node, profile: str) -> Candidate:
    return Candidate("node", node.pk, node.name, node.provider.name, node.region.code,
                     [{"id": node.pk, "name": node.name, "gpu_model": node.gpu_model}],
                     node.monthly_price_cny,
                     profile=profile, on_cpu=not node.claims_gpu, city=node.region.city,
                     province=node.region.province)


def cluster_candidate(result: ClusterResult) -> Candidate:
    members = sorted(result.nodes.all(), key=lambda n: n.name)
    prices = [n.monthly_price_cny for n in members]
    return Candidate("cluster", result.pk, clusters.name(result),
                     result.provider.name if result.provider else "",
                     result.region.code if result.region else "",
                     [{"id": n.pk, "name": n.name, "gpu_model": n.gpu_model} for n in members],
                     sum(p for p in prices if p) if members and all(prices) else None,
                     profile=result.profile,
                     on_cpu=any(not n.claims_gpu for n in members),
                     city=result.region.city if result.region else "",
                     province=result.region.province if result.region else "")


# --- what was measured ---------------------------------------------------------------------

class BoardValue(NamedTuple):
    value: float
    grade: str
    stand_in: bool  # a CPU's figure standing in for a GPU's
    run_id: int


# (profile, node) -> metric -> its board value
BoardValues = dict[tuple[str, int], dict[str, BoardValue]]


def board_values(found: list[Candidate], evidence: str = "") -> BoardValues:
    """Every board value of the candidates' nodes in their profiles and the evidence class:
    one query a profile, not one a candidate (50 candidates were 50 round trips, #35)."""
    wanted: dict[str, set[int]] = {}
    for c in found:
        if c.skipped is None:
            wanted.setdefault(c.profile or "default", set()).update(n["id"] for n in c.nodes)
    out: BoardValues = {}
    for profile, ids in wanted.items():
        for node_id, metric, value, grade, stand_in, run_id in LatestResult.objects.filter(
                node_id__in=sorted(ids), profile=profile,
                evidence=evidence_class(evidence)).values_list(
                "node_id", "metric", "value", "grade", "stand_in", "run_id"):
            out.setdefault((profile, node_id), {})[metric] = BoardValue(value, grade, stand_in,
                                                                        run_id)
    return out


def measured(c: Candidate, workload: Workload, evidence: str = "",
             board: BoardValues | None = None) -> Measured:
    """The candidate's figures for this job, of the evidence class (from ``board``, read
    for every candidate at once; read here when not given). A cluster runs at its slowest
    node's compute, storage and data loading; its all-reduce curve and slowest link are its
    own."""
    ids = [n["id"] for n in c.nodes]
    profile = c.profile or "default"
    board = board if board is not None else board_values([c], evidence)
    values: dict[int, dict[str, tuple[float, str]]] = {}
    stand_ins: set[int] = set()  # nodes whose matmul figure a CPU measured
    for node_id in ids:
        for metric, (value, grade, stand_in, _run) in board.get((profile, node_id), {}).items():
            values.setdefault(node_id, {})[metric] = (value, grade)
            if stand_in and metric == MATMUL[workload.precision]:
                stand_ins.add(node_id)
    used: list[str] = []

    def figure(pk: int, metric: str) -> float | None:
        found = values.get(pk, {}).get(metric)
        return found[0] if found else None

    matmul = MATMUL[workload.precision]
    compute = [figure(pk, matmul) for pk in ids]
    if not workload.cpu_only:
        compute = gpu_compute(c, workload, compute, stand_ins, used)
    if not all(compute):
        lacking = ", ".join(n["name"] for n, v in zip(c.nodes, compute, strict=True) if not v)
        # "measured" only when a host did report it: then a trial would measure it.
        claimed = LatestResult.objects.filter(node_id__in=ids, profile=profile, metric=matmul,
                                              evidence=LatestResult.ANY).exists()
        code = ("unmeasured-figure" if claimed and evidence_class(evidence) != LatestResult.ANY
                else "no-figure")
        raise estimate.Unestimable(Skipped(code, {"metric": matmul, "profile": profile,
                                                  "names": lacking}))
    used += [values[pk][matmul][1] for pk in ids if pk in values and matmul in values[pk]]
    c.links = {pk: v for pk in ids if (v := figure(pk, MODELLED_LINK))}
    c.sources.setdefault("tflops", f"board value of {matmul}, {profile} profile")
    figures: dict[str, Any] = {}
    for name, metric in NODE_FIGURES.items():
        found = [figure(pk, metric) for pk in ids]
        if all(found):
            figures[name] = min(v for v in found if v)
            used += [values[pk][metric][1] for pk in ids]
            c.sources[name] = f"board value of {metric}, {profile} profile"
    curve, link, grade = busbw_curve(c, workload, evidence, board)
    if grade:
        used.append(grade)
    c.evidence = lowest(used)
    if workload.data_site is not None:
        figures["site_gbps"], figures["site_rtt_ms"] = site_figures.slowest(workload.data_site, ids)
    return Measured(tflops=min(v for v in compute if v), busbw_curve=curve,
                    price_cny_month=c.price_cny_month, link_gbps=link, on_cpu=c.on_cpu,
                    province=c.province, **figures)


def gpu_compute(c: Candidate, workload: Workload, compute: list[float | None],
                stand_ins: set[int], used: list[str]) -> list[float | None]:
    """A GPU job's compute figure per node: a GPU's measured matmul; where none was measured
    (or only a CPU's), the enrolled model's attainable figure from its datasheet (the
    per-model table), labelled ``datasheet``; a node with no GPU enrolled has none, and the
    candidate is skipped (a CPU-only job is asked for explicitly)."""
    out: list[float | None] = []
    lacking: list[str] = []
    for node, value in zip(c.nodes, compute, strict=True):
        # A GPU figure counts only from a node that enrolled a GPU: a host without one that
        # leaves "device: cpu" out of its matmul sample still has no GPU to run the job on.
        if value is not None and node["id"] not in stand_ins and Node.is_gpu_model(
                node.get("gpu_model")):
            out.append(value)
            continue
        model = gpu_models.lookup(node.get("gpu_model") or "")
        if model is None:
            lacking.append(node["name"])
            continue
        peak, fraction = model.peak(workload.precision), model.matmul_attainable or 1.0
        out.append(peak * fraction)
        used.append(DATASHEET)
        c.sources["tflops"] = (f"datasheet of the enrolled {model.name}: {peak:g} TFLOP/s "
                               f"{workload.precision} x {fraction:g} attainable "
                               f"({model.attainable_source or model.source})")
    if lacking:
        raise estimate.Unestimable(Skipped("no-gpu", {"names": ", ".join(lacking)}))
    return out


def busbw_curve(c: Candidate, workload: Workload, evidence: str = "",
                board: BoardValues | None = None
                ) -> tuple[list[tuple[float, float]], float | None, str]:
    """The all-reduce curve (bytes, GB/s) measured across the candidate's ranks, its slowest
    link and its evidence: a cluster's from the run that timed its job's collectives (its
    grade), a node's from its board run of busbw in the class."""
    if workload.ranks < 2:
        return [], None, ""
    if c.modelled:
        return modelled_curve(c, evidence, board)
    if c.kind == "cluster":
        result = ClusterResult.objects.get(pk=c.id)
        rows = Sample.objects.filter(run__job_id=result.job_id, metric=BUSBW,
                                     run__status="succeeded").order_by("run_id")
        link, grade = result.slowest_link_gbps, result.grade
        where = f"job {result.job_id}"
    else:
        latest = LatestResult.objects.filter(node_id=c.id, metric=BUSBW, profile=c.profile,
                                             evidence=evidence_class(evidence)).first()
        rows = Sample.objects.filter(run_id=latest.run_id, metric=BUSBW) if latest else \
            Sample.objects.none()
        link, where = None, f"run {latest.run_id}" if latest else ""
        grade = latest.grade if latest else ""
    sample = rows.first()
    table = (sample.metadata or {}).get("curve") if sample else None
    # The curve is the host's word; its peak (the sample's value) is what intake checked
    # against the links the job measured, and the cluster's slowest link bounds any ring.
    # A point above either counts at the bound: an inflated 25 MiB point buys nothing.
    bounds = [sample.value] if sample else []
    if link:
        bounds.append(link / 8 * BUSBW_SLACK)
    curve = [(float(row["size_mib"]) * MIB, min(float(row["busbw_gbs"]), *bounds))
             for row in table or [] if isinstance(row, dict) and is_number(row.get("size_mib"))
             and is_number(row.get("busbw_gbs"))]
    if curve:
        c.sources["busbw_curve"] = f"{BUSBW} curve of {where}"
    return curve, link, grade if curve else ""


def modelled_curve(c: Candidate, evidence: str = "", board: BoardValues | None = None
                   ) -> tuple[list[tuple[float, float]], float | None, str]:
    """N of a node's kind, never measured together: each link of the ring at the node's own
    measured TCP throughput (its board value, to its region's reference), flat over message
    sizes. Latency is left out: the reference's RTT is a path out of the data centre, not
    between two of its racks; the candidate says its sync is modelled, and the verdict asks
    for an N-node trial before renting."""
    board = board if board is not None else board_values([c], evidence)
    latest = board.get((c.profile or "default", c.id), {}).get(MODELLED_LINK)
    if latest is None or latest.value <= 0:
        return [], None, ""
    gbs = latest.value / 8
    c.sources["busbw_curve"] = (f"modelled: {MODELLED_LINK} {latest.value:.3g} Gbit/s of run "
                                f"{latest.run_id} as each link of a {c.copies}-node ring")
    return [(float(MIB), gbs), (float(BUCKET_MIB * MIB), gbs)], latest.value, latest.grade


def is_number(value: Any) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool) and value > 0


# --- in words and as data ------------------------------------------------------------------

def workload_data(w: Workload) -> dict[str, Any]:
    return {"name": w.name, "params": w.params, "train_flops_per_sample": w.train_flops_per_sample,
            "global_batch": w.global_batch, "steps": w.steps, "nodes": w.nodes,
            "gpus_per_node": w.gpus_per_node, "ranks": w.ranks, "accumulation": w.accumulation,
            "precision": w.precision, "packed": w.packed,
            "gradient_bytes": w.params * estimate.GRAD_BYTES}


def estimate_data(e: Estimate) -> dict[str, Any]:
    data = {"parts_s": e.parts, "shares": e.shares or dict.fromkeys(e.parts, 0.0),
            "step_s": e.step_s, "sync_total_s": e.sync_total_s,
            "overlap": 1 - e.parts["sync"] / e.sync_total_s if e.sync_total_s else 0.0,
            "hours": e.hours, "cost_cny": e.cost_cny, "bottleneck": e.bottleneck,
            "unmeasured": e.unmeasured, "staging": e.staging,
            "what_ifs": [{"name": k, "step_s": v.step_s, "hours": v.hours, "cost_cny": v.cost_cny}
                         for k, v in e.what_ifs.items()]}
    # In the request's language; the codes and figures above are what it is worded from.
    return data | {"summary": outcomes.summary(data, number, _)}


def at_hours_data(a: AtHours) -> dict[str, Any]:
    return {"hours_of_day": a.hours_of_day, "link_share": a.share} | estimate_data(a.estimate)


def candidate_data(c: Candidate) -> dict[str, Any]:
    return {"rank": c.rank or None, "kind": c.kind, "id": c.id, "name": c.name,
            "provider": c.provider, "region": c.region, "city": c.city, "nodes": c.nodes,
            "price_cny_month": c.price_cny_month, "profile": c.profile, "on_cpu": c.on_cpu,
            "copies": c.copies, "modelled": c.modelled,
            "by_hour": {k: at_hours_data(a) for k, a in c.by_hour.items()},
            "sources": c.sources, "evidence": c.evidence,
            "estimate": estimate_data(c.estimate) if c.estimate else None,
            "skipped": c.skipped.words(_) if c.skipped else "",
            "skipped_code": c.skipped.code if c.skipped else "",
            "skipped_values": c.skipped.values if c.skipped else {}}
