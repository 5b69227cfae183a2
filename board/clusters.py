"""The cluster board: clusters of the same size and GPU model, ranked like with like.

A buyer rents N nodes of one GPU model from one provider in one data centre; such a node
set measured together (one multi-node job, a published profile) is an offer. It ranks by
default only when a buyer measured it (a job on the buyer's trial agents of those nodes:
ClusterResult.grade); the hosts' own cluster runs are their claims, listed apart. Its
figures are the median of its last LEADERBOARD_RUNS results of its class: the all-reduce
busbw at the largest message, DDP step time and comm share; beside them its slowest link,
the whole cluster's monthly price, and what is wrong with it (diagnose names the slow
node or link, and RDMA that NCCL did not use).
"""

from __future__ import annotations

import statistics
from dataclasses import dataclass, field
from typing import Any

from django.conf import settings
from django.db.models import Q
from django.db.models.functions import Coalesce
from django.utils.translation import gettext as _

from board import disk_faults, link_faults, multi_node
from board.diagnosis import Finding
from board.models import ClusterResult, LinkResult
from board.ranking import EVIDENCE_CHOICES
from config.errors import Invalid
from contract import metrics
from jobs.models import BenchmarkJob, Sample

DEFAULT_METRIC = "training.samples_per_s"
SLOWEST_LINK = "network.slowest_link"  # not a sample's metric: the cluster's weakest pair
# A cluster's busbw should reach this share of what its slowest link carries (GB/s).
BUSBW_OF_LINK = 0.9
# NCCL's transport (benchmarks.parsers.nccl) when it sent between nodes over TCP.
NCCL_SOCKETS = "NET/Socket"
# (node name, the active RDMA ports its host listed, the transport its NCCL log named)
HostTransport = tuple[str, list[str], str | None]


class BadClusterFilter(Invalid, ValueError):
    default_field = "metric"


@dataclass
class ClusterEntry:
    rank: int
    result: ClusterResult  # the newest of the runs below
    price_cny_month: int | None
    price_per_throughput: float | None
    findings: list[Finding] = field(default_factory=list)
    # metric -> {"value", "unit", "n"}: the median of the node set's last LEADERBOARD_RUNS
    # results of its class (one run's figures would let a provider show its best hour).
    figures: dict[str, dict[str, Any]] = field(default_factory=dict)
    runs: int = 1

    def value(self, metric: str) -> float | None:
        if metric == SLOWEST_LINK:
            return self.result.slowest_link_gbps
        figure = self.figures.get(metric)
        return float(figure["value"]) if isinstance(figure, dict) else None


def grades(evidence: str) -> tuple[str, ...]:
    """The rungs a board of ``evidence`` shows (the node board's classes: empty is measured,
    the buyers' own runs on trial agents; "any" adds the hosts' claims)."""
    if evidence and evidence not in EVIDENCE_CHOICES:
        raise BadClusterFilter(f"evidence must be one of {', '.join(EVIDENCE_CHOICES)}, not "
                               f"{evidence[:32]!r}", field="evidence")
    return {"verified": (Sample.PLATFORM_VERIFIED,), "any": Sample.LADDER}.get(
        evidence, Sample.MEASURED)


def choices() -> list[str]:
    return [SLOWEST_LINK, *metrics.family(metrics.CLUSTER_FAMILY)]


def higher_is_better(metric: str) -> bool:
    return True if metric == SLOWEST_LINK else metrics.METRICS[metric].higher_is_better


def board(metric: str = DEFAULT_METRIC, size: int | None = None, gpu_model: str | None = None,
          region: str = "", profile: str = "",
          evidence: str = "") -> list[tuple[tuple[int, str], list[ClusterEntry]]]:
    """Sections (size, GPU model), each ranked on ``metric``, best first: the clusters
    measured by the evidence class (by default buyer-measured: a buyer's trial agents)."""
    if metric not in choices():
        raise BadClusterFilter(f"unknown cluster metric {metric!r}; known: {', '.join(choices())}")
    sections: dict[tuple[int, str], list[ClusterEntry]] = {}
    for e in offers(grades(evidence), size, gpu_model, region, profile):
        sections.setdefault((e.result.size, e.result.gpu_model), []).append(e)
    better = higher_is_better(metric)
    out = []
    for key in sorted(sections, key=lambda k: (k[0], k[1])):
        known = [e for e in sections[key] if e.value(metric) is not None]
        known.sort(key=lambda e: (-(e.value(metric) or 0) if better else (e.value(metric) or 0),
                                  e.result.key))
        unknown = [e for e in sections[key] if e.value(metric) is None]
        for i, e in enumerate(known + unknown):
            e.rank = i + 1
        out.append((key, known + unknown))
    return out


def claims(size: int | None = None, gpu_model: str | None = None, region: str = "",
           profile: str = "") -> list[ClusterEntry]:
    """The clusters only their hosts measured: the providers' claims, listed apart, unranked."""
    return sorted(offers((Sample.HOST_REPORTED,), size, gpu_model, region, profile),
                  key=lambda e: (e.result.size, e.result.gpu_model, e.result.key))


def offers(kept: tuple[str, ...], size: int | None, gpu_model: str | None, region: str,
           profile: str) -> list[ClusterEntry]:
    """One entry per node set and profile: its last LEADERBOARD_RUNS ranked results whose
    grade is one of ``kept``."""
    rows = (ClusterResult.objects.filter(offer=True, ranked=True, grade__in=kept)
            .select_related("provider", "region").prefetch_related("nodes")
            .order_by("-measured_at", "-id"))
    if size is not None:
        rows = rows.filter(size=size)
    if gpu_model is not None:
        rows = rows.filter(gpu_model__iexact=gpu_model)
    if region:
        rows = rows.filter(Q(region__code__iexact=region) | Q(region__province__iexact=region))
    if profile:
        rows = rows.filter(profile=profile)
    recent: dict[tuple[str, str], list[ClusterResult]] = {}
    for result in rows[:5000]:
        kept_runs = recent.setdefault((result.key, result.profile), [])
        if len(kept_runs) < settings.LEADERBOARD_RUNS:
            kept_runs.append(result)
    return [entry(results[0], results) for results in recent.values()]


def median_figures(results: list[ClusterResult]) -> dict[str, dict[str, Any]]:
    """Per metric, the median of these results' figures (newest first)."""
    values: dict[str, list[float]] = {}
    units: dict[str, str] = {}
    for result in results:
        for metric, figure in (result.figures or {}).items():
            if isinstance(figure, dict) and isinstance(figure.get("value"), (int, float)):
                values.setdefault(metric, []).append(float(figure["value"]))
                units.setdefault(metric, str(figure.get("unit", "")))
    return {m: {"value": statistics.median(v), "unit": units[m], "n": len(v)}
            for m, v in values.items()}


def entry(result: ClusterResult, recent: list[ClusterResult] | None = None) -> ClusterEntry:
    nodes = list(result.nodes.all())
    prices = [n.monthly_price_cny for n in nodes]
    price = sum(p for p in prices if p) if nodes and all(prices) else None
    figures = median_figures(recent or [result])
    throughput = figures.get("training.samples_per_s", {}).get("value")
    return ClusterEntry(0, result, price,
                        round(price / throughput, 4) if price and throughput else None,
                        diagnose(result, multi_node.links_of(result.job_id,
                                                             [n.pk for n in nodes])),
                        figures=figures, runs=len(recent or [result]))


def diagnose(result: ClusterResult, links: list[LinkResult]) -> list[Finding]:
    """Name the bad part, as pairwise re-testing would: a node whose links are slow, lossy
    or latent while the links among the others are not, else such a link; and a busbw its
    links do not explain."""
    findings = link_findings(links)
    busbw = result.figures.get("training.allreduce_busbw_largest", {}).get("value")
    if busbw is not None and result.slowest_link_gbps:
        carries = result.slowest_link_gbps / 8  # GB/s
        if busbw < BUSBW_OF_LINK * carries:
            findings.append(Finding(
                "busbw-under-links", _("all-reduce reaches %(busbw)s GB/s, %(share)s of what the "
                                       "slowest link carries (%(carries)s GB/s)")
                % {"busbw": f"{busbw:.3g}", "share": f"{busbw / carries:.0%}",
                   "carries": f"{carries:.3g}"},
                _("check NCCL's transport (NCCL_DEBUG=INFO: socket vs IB/RoCE), NCCL_SOCKET_IFNAME "
                  "and the number of sockets per thread")))
    unused = rdma_unused(transports(result.job_id))
    if unused is not None:
        findings.append(unused)
    return findings


def transports(job_id: int) -> list[HostTransport]:
    """Each node's side of a job: the active RDMA ports its host's inventory listed when it
    ran (fleet inventory ``rdma.active_ports``) and the transport its NCCL log named (the
    busbw sample's ``transport``). Host-reported, so read defensively."""
    # A trial agent is named by the node it measures (its own name is the buyer's).
    rows = (Sample.objects.filter(run__job_id=job_id, metric="training.allreduce_busbw_largest")
            .values_list(Coalesce("run__node__trial_of__name", "run__node__name"),
                         "run__inventory__rdma__active_ports", "metadata__transport"))
    return [(name, [str(p) for p in ports] if isinstance(ports, list) else [],
             transport if isinstance(transport, str) else None)
            for name, ports, transport in rows]


def rdma_unused(hosts: list[HostTransport]) -> Finding | None:
    """Nodes whose hosts show active RDMA ports (InfiniBand or RoCE) while NCCL sent between
    the nodes over TCP sockets: the RDMA network the provider offers did not carry the job."""
    named = sorted(name for name, ports, transport in hosts
                   if ports and transport == NCCL_SOCKETS)
    if not named:
        return None
    return Finding("rdma-unused",
                   _("%(nodes)s: the host shows active RDMA ports, but NCCL sent between the "
                     "nodes over TCP sockets (NET/Socket)") % {"nodes": ", ".join(named)},
                   _("ask the provider why NCCL cannot use RDMA there: NCCL_IB_DISABLE must be "
                     "unset or 0, the container needs /dev/infiniband and rdma-core "
                     "(libibverbs), and NCCL_IB_HCA must name the active ports"))


def link_findings(links: list[LinkResult]) -> list[Finding]:
    """The bad node if one explains the bad links, else each bad link (board/link_faults.py)."""
    return link_faults.findings(links)


def part_findings(links: list[LinkResult], job_id: int | None) -> list[Finding]:
    """The bad parts: from the links, the bad node or link; from one job, also the slow
    disk among its nodes' storage figures (board/disk_faults.py), which are only ever
    compared within that job."""
    return link_findings(links) + (disk_faults.job_findings(job_id) if job_id is not None else [])


def name(result: ClusterResult) -> str:
    """What a buyer rents: "West Lake DC, Hangzhou, 4 x A100"."""
    where = ", ".join(x for x in (result.provider.name if result.provider else "mixed providers",
                                  result.region.city if result.region else "mixed regions") if x)
    model = result.gpu_model if result.gpu_model not in ("", "none") else "CPU"
    return f"{where}, {result.size} x {model}"


def job_cluster(job: BenchmarkJob) -> dict[str, Any] | None:
    """A multi-node job's node set as its owner sees it on the job: the figures, whether it
    is an offer (and on which board), and the diagnosis; None for a one-node job."""
    result = ClusterResult.objects.filter(job=job).select_related(
        "provider", "region").first() if job.node_count > 1 else None
    if result is None:
        return None
    return {"cluster": result.key, "name": name(result), "size": result.size,
            "offer": result.offer, "ranked": result.ranked, "figures": result.figures,
            "slowest_link_gbps": result.slowest_link_gbps, "evidence": result.grade,
            "note": ("mixes providers, regions or GPU models: shown to you, ranked on no "
                     "cluster board") if not result.offer else (
                "" if result.grade in Sample.MEASURED else
                "its hosts' own figures: listed as the provider's claim, ranked only with "
                "evidence=any (a buyer's trial agents make it buyer-measured)"),
            "diagnosis": [f.__dict__ for f in diagnose(result, multi_node.links_of(
                job.pk, list(result.nodes.values_list("pk", flat=True))))
                          + disk_faults.job_findings(job.pk)]}
