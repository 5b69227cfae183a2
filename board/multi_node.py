"""A multi-node job's figures, given to what they measured: each link, and the node set.

Recorded when jobs says the job has finished (job_finished: several runs may finish together, the
writes are idempotent). The samples stay as they were posted, the record of what each host
said; the link and cluster rows are read from them.

A link (source -> target) has two views of the same iperf3 tests: the sender's client
JSON (its ``network.internode_throughput`` sample, with the tests' cookies) and the
receiving node's own server log (its ``network.internode_received`` sample, each test by
cookie). They are two hosts' words; when both counts of the same cookies agree within
LINK_AGREEMENT the link is ``agreed``, and its figure is the receiver's count; when they
disagree it is the lower one. Two nodes of one provider can agree on a lie: a link is
``confirmed`` only when its receiver is another provider's host or a buyer's trial agent,
and its figure is still bounded by both ends' NICs (consistency.within_nic_rate).

A job on a buyer's trial agents measures the provider's nodes they stand on: its links and
its cluster are those nodes', and the cluster is ``buyer-measured`` (ClusterResult.grade).
"""

from __future__ import annotations

import statistics
from collections import defaultdict
from typing import Any

from django.db import transaction
from django.db.models import QuerySet
from django.utils import timezone

from board.models import ClusterResult, LinkResult
from contract import metrics
from contract.run_spec import MESH_PREFIX
from contract.suites import SUITES
from fleet.models import Node
from jobs.models import BenchmarkJob, Run, Sample
from jobs.services import visibility

LINK_AGREEMENT = 0.05


def _measured(node: Node) -> Node:
    """The node a run's figures belong to: a buyer's trial agent measures its node."""
    return node.trial_of if node.trial_of is not None else node


def _buyer_measured(job: BenchmarkJob, runs: list[Run]) -> bool:
    """Every run on a trial agent of the buyer who asked: the buyer's own measurement."""
    return bool(runs) and all(r.node.trial_of_id is not None
                              and r.node.trial_buyer_id == job.owner_id for r in runs)


def concerns(job: BenchmarkJob) -> bool:
    """Whether the job can have link or cluster results: several nodes, and a suite that
    tests links or trains (a multi-node no-op job, as make bench submits, has neither)."""
    probes = SUITES.get(job.suite, ())
    return job.node_count > 1 and ("network" in probes or "training" in probes)


def record(job_id: int, finished: bool = False) -> bool:
    """Store the job's link and cluster results once its runs are all finished (``finished``:
    the caller has just checked)."""
    # Unless the caller has just seen the last run in (job_finished): one cheap count.
    if not finished and Run.objects.filter(job_id=job_id).exclude(
            status__in=Run.FINISHED).exists():
        return False
    job = BenchmarkJob.objects.filter(pk=job_id).first()
    if job is None or not concerns(job):
        return False
    runs = list(job.runs.select_related("node__provider", "node__region",
                                        "node__trial_of__provider", "node__trial_of__region")
                .order_by("id"))
    succeeded = [r for r in runs if r.status == Run.Status.SUCCEEDED]
    samples: dict[int, list[dict[str, Any]]] = defaultdict(list)
    for s in Sample.objects.filter(run__in=succeeded).values("run_id", "metric", "value", "unit",
                                                              "n", "cv", "metadata"):
        samples[s["run_id"]].append(dict(s))
    with transaction.atomic():
        _links(job, runs, succeeded, samples)
        _cluster(job, runs, succeeded, samples)
    return True


def _links(job: BenchmarkJob, runs: list[Run], succeeded: list[Run],
           samples: dict[int, list[dict[str, Any]]]) -> None:
    by_name: dict[str, list[Node]] = defaultdict(list)
    for run in runs:
        by_name[run.node.name].append(run.node)
    received: dict[int, dict[str, float]] = {}  # target node -> cookie -> its own count
    for run in succeeded:
        received[run.node_id] = {
            str(t.get("cookie")): float(t.get("gbps", 0)) for s in samples[run.pk]
            if s["metric"] == "network.internode_received"
            for t in s["metadata"].get("served") or [] if isinstance(t, dict)}
    ranked = all(r.ranked for r in runs)
    rows = []
    for run in succeeded:
        rtts = {s["metadata"].get("peer"): s["value"] for s in samples[run.pk]
                if s["metric"] == "network.internode_rtt"}
        for s in samples[run.pk]:
            peer = str(s["metadata"].get("peer", ""))
            targets = by_name.get(peer.removeprefix(MESH_PREFIX), [])
            if s["metric"] != "network.internode_throughput" or len(targets) != 1:
                continue
            target = targets[0]
            counts = received.get(target.pk, {})
            cookies = [str(c) for c in s["metadata"].get("cookies") or []]
            theirs = [counts[c] for c in cookies if c in counts]
            receiver = statistics.median(theirs) if theirs and len(theirs) == len(cookies) else None
            agreed = receiver is not None and receiver > 0 and (
                abs(s["value"] - receiver) <= LINK_AGREEMENT * receiver)
            # The receiver confirms only as an independent witness: a partner host of the
            # same provider listing the same cookies is the provider's word twice; a buyer's
            # trial agent is the buyer's.
            confirmed = agreed and (target.provider_id != run.node.provider_id
                                    or target.trial_of_id is not None)
            # Unconfirmed, the lower of the two views: an end that inflates its count gains
            # nothing, and the link is marked.
            figure = s["value"] if receiver is None else min(s["value"], receiver)
            rows.append(LinkResult(
                job=job, source=_measured(run.node), target=_measured(target),
                throughput_gbps=receiver if agreed else figure, sender_gbps=s["value"],
                receiver_gbps=receiver, rtt_ms=rtts.get(peer), throughput_cv=s.get("cv"),
                retransmits_per_gb=per_gb(s["metadata"]), agreed=agreed, confirmed=confirmed,
                ranked=ranked, profile=job.profile,
                measured_at=run.finished_at or timezone.now()))
    LinkResult.objects.bulk_create(
        rows, update_conflicts=True, unique_fields=["job", "source", "target"],
        update_fields=["throughput_gbps", "sender_gbps", "receiver_gbps", "rtt_ms",
                       "throughput_cv", "retransmits_per_gb", "agreed",
                       "confirmed",
                       "ranked", "profile", "measured_at"])


def per_gb(metadata: dict[str, Any]) -> float | None:
    """Retransmits per GB sent, from the sender's counts (host-reported: read defensively)."""
    count, sent = metadata.get("retransmits"), metadata.get("sent_gb")
    if not isinstance(count, (int, float)) or not isinstance(sent, (int, float)) or sent <= 0:
        return None
    return max(0.0, float(count)) / float(sent)


def _cluster(job: BenchmarkJob, runs: list[Run], succeeded: list[Run],
             samples: dict[int, list[dict[str, Any]]]) -> None:
    # Rank 0 times the collectives for the whole job; another rank stands in if it failed.
    timed = next((r for r in succeeded if any(
        s["metric"].startswith(f"{metrics.CLUSTER_FAMILY}.") for s in samples[r.pk])), None)
    if timed is None:
        return
    figures = {s["metric"]: {"value": s["value"], "unit": s["unit"], "n": s["n"]}
               for s in samples[timed.pk] if s["metric"].startswith(f"{metrics.CLUSTER_FAMILY}.")}
    nodes = [_measured(r.node) for r in runs]
    providers = {n.provider_id for n in nodes}
    regions = {n.region_id for n in nodes}
    models = {n.gpu_model for n in nodes}
    links = [li.throughput_gbps for li in links_of(job.pk, [n.pk for n in nodes])]
    cluster, _ = ClusterResult.objects.update_or_create(job=job, defaults={
        "key": ",".join(str(i) for i in sorted(n.pk for n in nodes)), "size": len(nodes),
        "provider_id": next(iter(providers)) if len(providers) == 1 else None,
        "region_id": next(iter(regions)) if len(regions) == 1 else None,
        "gpu_model": next(iter(models)) if len(models) == 1 else "",
        "offer": len(providers) == 1 and len(regions) == 1 and len(models) == 1,
        "ranked": all(r.ranked and r.status == Run.Status.SUCCEEDED for r in runs),
        "profile": job.profile, "figures": figures,
        "slowest_link_gbps": min((v for v in links if v is not None), default=None),
        "measured_at": max(r.finished_at or timezone.now() for r in succeeded),
        "grade": Sample.BUYER_MEASURED if _buyer_measured(job, runs) else Sample.HOST_REPORTED})
    cluster.nodes.set(nodes)


def links_of(job_id: int, node_ids: list[int]) -> list[LinkResult]:
    """A cluster's links: those its own job measured, else (a training-only job) the latest
    measured between its nodes in a ranked job or another of the same owner's: never
    another buyer's unranked job (what they tested, and how it went, is theirs)."""
    own = list(LinkResult.objects.filter(job_id=job_id).select_related("source", "target"))
    if own:
        return own
    owner = BenchmarkJob.objects.filter(pk=job_id).values_list("owner", flat=True).first()
    between = LinkResult.objects.filter(source_id__in=node_ids, target_id__in=node_ids)
    return latest_per_pair(visibility.visible(between, owner).select_related("source", "target"))


def latest_per_pair(rows: QuerySet[LinkResult], limit: int = 20_000) -> list[LinkResult]:
    """The newest result of each ordered pair (source, target) among ``rows``."""
    newest: dict[tuple[int, int], LinkResult] = {}
    for link in rows.order_by("-measured_at", "-id")[:limit]:
        newest.setdefault((link.source_id, link.target_id), link)
    return list(newest.values())
