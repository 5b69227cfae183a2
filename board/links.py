"""Links between nodes: the matrix of every measured pair, and the paths between regions.

A link's figure is its latest ranked test (source -> target); the matrix shows each
ordered pair once, so both directions of a link sit side by side, with both ends' views.
"""

from __future__ import annotations

import statistics
from collections import defaultdict
from dataclasses import dataclass
from typing import Any

from django.db.models import F, Q, QuerySet

from board.models import LinkResult
from board.multi_node import latest_per_pair
from config.errors import Invalid
from fleet.models import Node
from jobs.models import BenchmarkJob
from jobs.services import visibility

MAX_MATRIX_NODES = 64


class BadSelection(Invalid, ValueError):
    default_field = "job"


@dataclass(frozen=True)
class Selection:
    """Which nodes' links: one job's, one provider's, one region's (code or province), or
    the links of one node. At least one is given."""

    job: int | None = None
    provider: str = ""
    region: str = ""
    node: int | None = None

    @classmethod
    def from_query(cls, query: Any) -> Selection:
        def number(name: str) -> int | None:
            raw = str(query.get(name) or "")
            if raw and not raw.isdigit():
                raise BadSelection(f"{name} must be a number, not {raw[:32]!r}")
            return int(raw) if raw else None

        selection = cls(job=number("job"), provider=str(query.get("provider") or ""),
                        region=str(query.get("region") or ""), node=number("node"))
        if selection == cls():
            raise BadSelection("give job, provider, region or node: whose links to show")
        return selection


def latest_links(selection: Selection, ranked_only: bool = True) -> list[LinkResult]:
    """The latest result of each ordered pair within the selection (a job's: all of them)."""
    rows: QuerySet[LinkResult] = LinkResult.objects.select_related(
        "source__region", "source__provider", "target__region", "target__provider")
    if selection.job is not None:
        rows = rows.filter(job_id=selection.job)  # its owner's (the view checks whose)
    elif ranked_only:
        rows = visibility.visible(rows)
    if selection.provider:
        rows = rows.filter(source__provider__name__iexact=selection.provider,
                           target__provider__name__iexact=selection.provider)
    if selection.region:
        for end in ("source", "target"):
            rows = rows.filter(Q(**{f"{end}__region__code__iexact": selection.region})
                               | Q(**{f"{end}__region__province__iexact": selection.region}))
    if selection.node is not None:
        rows = rows.filter(Q(source_id=selection.node) | Q(target_id=selection.node))
    return by_names(latest_per_pair(rows, MAX_MATRIX_NODES ** 2 * 4))


def neighbourhood(node_id: int, viewer: Any = None, jobs: int = 5) -> list[LinkResult]:
    """The latest links of the last few jobs the node was measured in, its peers' links
    among themselves too: what tells a slow node from a slow peer. Of ranked jobs and the
    viewer's own only: which nodes another buyer tested together is theirs."""
    visible = visibility.visible(LinkResult.objects.all(), viewer)
    job_ids = list(visible.filter(Q(source_id=node_id) | Q(target_id=node_id))
                   .order_by("-measured_at").values_list("job_id", flat=True).distinct()[:jobs * 16])
    return by_names(latest_per_pair(
        visible.filter(job_id__in=list(dict.fromkeys(job_ids))[:jobs])
        .select_related("source", "target")))


def by_names(links: list[LinkResult]) -> list[LinkResult]:
    return sorted(links, key=lambda li: (li.source.name, li.target.name))


def history(source_id: int, target_id: int, limit: int = 500) -> list[LinkResult]:
    """Every ranked test of one direction of one link, oldest first: links keep history as
    nodes do."""
    rows = (visibility.visible(LinkResult.objects.filter(source_id=source_id, target_id=target_id))
            .select_related("source", "target").order_by("-measured_at", "-id")[:limit])
    return list(reversed(rows))


def matrix(links: list[LinkResult]) -> dict[str, Any]:
    """Nodes (rows and columns, by name) and one cell per measured ordered pair."""
    nodes: dict[int, Node] = {}
    for link in links:
        nodes.setdefault(link.source_id, link.source)
        nodes.setdefault(link.target_id, link.target)
    ordered = sorted(nodes.values(), key=lambda n: n.name)[:MAX_MATRIX_NODES]
    keep = {n.pk for n in ordered}
    return {"nodes": [{"id": n.pk, "name": n.name} for n in ordered],
            "links": [link_data(li) for li in links
                      if li.source_id in keep and li.target_id in keep]}


def link_data(link: LinkResult) -> dict[str, Any]:
    return {"from_node": link.source_id, "from_name": link.source.name,
            "to_node": link.target_id, "to_name": link.target.name,
            "throughput_gbps": link.throughput_gbps, "sender_gbps": link.sender_gbps,
            "receiver_gbps": link.receiver_gbps, "rtt_ms": link.rtt_ms,
            "agreed": link.agreed, "confirmed": link.confirmed, "job": link.job_id,
            "measured_at": link.measured_at, "throughput_cv": link.throughput_cv,
            "retransmits_per_gb": link.retransmits_per_gb}


@dataclass(frozen=True)
class RegionPath:
    from_region: str
    to_region: str
    links: int
    rtt_ms: float | None
    throughput_gbps: float | None
    # A row from one of the viewer's own sites (board/site_figures.py): its id and name; the
    # throughput is the site's upload to the region's nodes. Null on the platform's rows.
    site: int | None = None
    site_name: str = ""


def region_paths() -> list[RegionPath]:
    """Median RTT and throughput of the latest links between nodes of two different cities."""
    rows = (visibility.visible(LinkResult.objects.all()).exclude(source__region=F("target__region"))
            .select_related("source__region", "target__region"))
    buckets: dict[tuple[str, str], list[LinkResult]] = defaultdict(list)
    for link in latest_per_pair(rows):
        buckets[(link.source.region.code, link.target.region.code)].append(link)
    out = []
    for (source, target), links in sorted(buckets.items()):
        rtts = [li.rtt_ms for li in links if li.rtt_ms is not None]
        rates = [li.throughput_gbps for li in links if li.throughput_gbps is not None]
        out.append(RegionPath(source, target, len(links),
                              statistics.median(rtts) if rtts else None,
                              statistics.median(rates) if rates else None))
    return out


def job_links(job: BenchmarkJob) -> list[dict[str, Any]]:
    """A multi-node job's links, each direction with both ends' views, by name."""
    if job.node_count < 2:
        return []
    return [link_data(li) for li in job.links.select_related("source", "target")
            .order_by("source__name", "target__name")]
