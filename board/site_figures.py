"""A site's figures for display: the latest measurement of each node from it, as the buyer's
CLI measured it (jobs.services.site_probes keeps them). The owner's alone, never ranked."""

from __future__ import annotations

import statistics
from collections import defaultdict
from typing import Any

from board.links import RegionPath
from contract.sample import summarise
from jobs.models import Site, SiteProbe
from jobs.services import site_probes


def figures(site: Site) -> list[dict[str, Any]]:
    rows = []
    for probe in site_probes.latest(site):
        spread = summarise("network.tcp_rtt", probe.rtts_ms) if probe.rtts_ms else None
        rows.append({"node": probe.node_id, "node_name": probe.node.name,
                     "region": probe.node.region.code, "rtt_ms": probe.rtt_ms,
                     "rtt_p95_ms": spread.p95 if spread else None,
                     "upload_gbps": probe.upload_gbps, "download_gbps": probe.download_gbps,
                     "hop_count": probe.hop_count, "confirmed": probe.confirmed,
                     "measured_at": probe.measured_at})
    return rows


def by_node(site: Site) -> dict[int, dict[str, Any]]:
    return {row["node"]: row for row in figures(site)}


def slowest(site_id: int, node_ids: list[int]) -> tuple[float | None, float | None]:
    """The site-to-node throughput and round trip a job on these nodes waits for: the slowest
    node's latest probe from the site; (None, None) while any of them has none."""
    rows = {p.node_id: p for p in SiteProbe.objects.filter(
        site_id=site_id, node_id__in=node_ids, measured_at__isnull=False,
        upload_gbps__isnull=False, rtt_ms__isnull=False).order_by("node_id", "-measured_at")
        .distinct("node_id")}
    if not node_ids or set(node_ids) - set(rows):
        return None, None
    return (min(p.upload_gbps for p in rows.values() if p.upload_gbps is not None),
            max(p.rtt_ms for p in rows.values() if p.rtt_ms is not None))


# "From my site" orders of the board (GET /api/v1/leaderboard?site=ID&sort=...): the key of
# a node's site figures, and whether a larger figure is better.
SORTS = {"site_rtt": ("rtt_ms", False), "site_upload": ("upload_gbps", True),
         "site_download": ("download_gbps", True)}


def beside(rows: list[dict[str, Any]], site: Site, sort: str = "") -> list[dict[str, Any]]:
    """The board's rows, each with the site's figures of its node (null where it has none),
    in the ``sort`` order of SORTS when given (the nodes the site has not probed last)."""
    mine = by_node(site)
    for row in rows:
        row["site"] = mine.get(row["node"]["id"])
    if sort:
        key, higher = SORTS[sort]

        def order(row: dict[str, Any]) -> tuple[bool, float]:
            value = (row["site"] or {}).get(key)
            return (value is None, -(value or 0.0) if higher else (value or 0.0))

        rows.sort(key=order)
    return rows


def site_paths(owner: Any) -> list[RegionPath]:
    """The owner's sites as rows of the region-to-region view: from each site to each region
    it probed nodes of, the median of its latest figures of those nodes (theirs alone)."""
    out = []
    for site in Site.objects.filter(owner=owner).order_by("name"):
        buckets: dict[str, list[Any]] = defaultdict(list)
        for probe in site_probes.latest(site):
            buckets[probe.node.region.code].append(probe)
        for region, probes in sorted(buckets.items()):
            rtts = [p.rtt_ms for p in probes if p.rtt_ms is not None]
            rates = [p.upload_gbps for p in probes if p.upload_gbps is not None]
            out.append(RegionPath(site.city, region, len(probes),
                                  statistics.median(rtts) if rtts else None,
                                  statistics.median(rates) if rates else None,
                                  site=site.pk, site_name=site.name))
    return out
