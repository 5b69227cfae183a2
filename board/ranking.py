"""Ranking nodes on one metric, like with like: one profile, filters, spread and staleness.

Evidence, the ladder: the default ranking uses figures the platform verified (its reference
endpoint's own record) and figures a buyer measured (a trial agent only the buyer holds);
nodes with host-reported figures only are listed apart, unranked, as their provider's
claims. ``evidence=verified`` ranks the platform's own figures only, ``evidence=any`` every
figure (marked).
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from datetime import timedelta
from typing import Any

from django.conf import settings
from django.db.models import Count, Exists, OuterRef, Q, QuerySet
from django.utils import timezone

from board import diagnosis, page_cache, score, stability, stability_board
from board.models import LatestResult
from config.errors import Invalid
from contract import metrics
from contract.sample import percentile
from contract.suites import UNRANKED_LABEL
from fleet.models import Node, Provider, Region
from fleet.services import identity
from jobs.models import Sample
from jobs.services import visibility

DEFAULT_METRIC = "network.tcp_throughput"
# Price-performance is per unit of this: the training throughput the probe measured.
THROUGHPUT_METRIC = "training.samples_per_s"


class BadFilter(Invalid, ValueError):
    """A board filter that names nothing on the board; the field says which."""

    default_field = "metric"


class UnknownMetric(BadFilter):
    pass


class BadEvidence(BadFilter):
    default_field = "evidence"


EVIDENCE_CHOICES = ("verified", "measured", "any")


@dataclass(frozen=True)
class Filters:
    metric: str = DEFAULT_METRIC
    region: str = ""  # a province ("zhejiang") or a city/region code ("hangzhou")
    provider: str = ""
    provider_kind: str = ""
    gpu_model: str = ""
    profile: str = ""  # empty: the profile with the most results for the metric
    certified: bool = False
    evidence: str = ""  # empty: measured (platform-verified and buyer-measured figures)
    max_price: int | None = None  # CNY per month: a buyer's budget (nodes with no price drop out)

    @classmethod
    def from_query(cls, query: Any) -> Filters:
        for key in ("metric", "region", "provider", "provider_kind", "gpu_model", "profile", "evidence"):
            if "\x00" in str(query.get(key, "")):  # PostgreSQL text cannot hold NUL: a 400, not a 503
                raise BadText(f"{key} must not contain NUL bytes", field=key)
        return cls(metric=query.get("metric") or DEFAULT_METRIC, region=query.get("region", ""),
                   provider=query.get("provider", ""), provider_kind=query.get("provider_kind", ""),
                   gpu_model=query.get("gpu_model", ""), profile=query.get("profile", ""),
                   certified=str(query.get("certified", "")).lower() in ("1", "true", "yes"),
                   evidence=query.get("evidence", ""), max_price=budget(query.get("max_price")))

    def evidence_class(self) -> str:
        """Which board rows rank: verified figures only, or every figure."""
        if self.evidence and self.evidence not in EVIDENCE_CHOICES:
            raise BadEvidence(f"evidence must be one of {', '.join(EVIDENCE_CHOICES)}, "
                              f"not {self.evidence!r}")
        return evidence_class(self.evidence)


def evidence_class(evidence: str) -> str:
    """The board class a query's ``evidence`` names (empty: the default, measured)."""
    return {"verified": LatestResult.VERIFIED, "any": LatestResult.ANY}.get(
        evidence, LatestResult.MEASURED)


class BadText(BadFilter):
    pass


class BadBudget(BadFilter):
    default_field = "max_price"


def budget(raw: Any) -> int | None:
    """A monthly budget in CNY from a query string: empty for none, else a whole number."""
    text = str(raw or "").replace(",", "").strip()
    if not text:
        return None
    if not text.isdigit() or len(text) > 9:
        raise BadBudget(f"max_price must be a whole number of CNY per month, not {text[:32]!r}")
    return int(text)


def metric_of(name: str) -> metrics.Metric:
    metric = metrics.METRICS.get(name)
    if metric is None:
        raise UnknownMetric(f"unknown metric {name!r}; known: {', '.join(sorted(metrics.METRICS))}")
    return metric


def profile_for(filters: Filters) -> str:
    if filters.profile:
        return filters.profile
    return busiest_profile(filters.metric)


def busiest_profile(metric: str) -> str:
    """The profile with the most nodes' figures of ``metric``: what a board ranks when no
    profile is asked for. A count over every node's rows (30 ms at 10,000 nodes, asked twice
    by a board page), kept as a board page is (board/page_cache.py); an unknown metric's is
    not kept, so junk in a query cannot fill the cache."""
    def count() -> str:
        busiest = (LatestResult.objects.filter(metric=metric, evidence=LatestResult.ANY)
                   .values("profile")
                   .annotate(n=Count("*")).order_by("-n", "profile").first())
        return str(busiest["profile"]) if busiest else "default"

    return page_cache.kept(f"busiest:{metric}", count) if metric in metrics.METRICS else count()


def filtered(filters: Filters, profile: str, evidence: str | None = None,
             stand_ins: bool = False) -> QuerySet[LatestResult]:
    """The board rows of the filters' metric; a CPU's stand-in for a GPU figure only when
    asked for (a CPU-only job's estimate): it never ranks against GPUs."""
    rows = (LatestResult.objects.filter(metric=filters.metric, profile=profile,
                                        evidence=evidence or filters.evidence_class(),
                                        node__status=Node.Status.ACTIVE)
            .select_related("node__provider", "node__region")
            # A host's inventory is its page's, never a board row's: three JSON documents a
            # row decoded for nothing (#35).
            .defer("node__inventory", "node__enrolled_nic_mbps", "node__enrolled_disks"))
    if not stand_ins:
        rows = rows.filter(stand_in=False)
    if filters.region:
        rows = rows.filter(Q(node__region__code__iexact=filters.region)
                           | Q(node__region__province__iexact=filters.region)
                           | Q(node__region__city__iexact=filters.region))
    if filters.provider:
        rows = rows.filter(node__provider__name__iexact=filters.provider)
    if filters.provider_kind:
        rows = rows.filter(node__provider__kind=filters.provider_kind)
    if filters.gpu_model:
        rows = rows.filter(node__gpu_model__iexact=filters.gpu_model)
    if filters.max_price is not None:
        rows = rows.filter(node__monthly_price_cny__lte=filters.max_price)
    if filters.certified:
        rows = rows.filter(node__certificates__revoked_at__isnull=True,
                           node__certificates__expires_at__gt=timezone.now()).distinct()
    return rows


def ordering(metric: metrics.Metric) -> tuple[str, str]:
    return ("-value", "node_id") if metric.higher_is_better else ("value", "node_id")


def ranked(filters: Filters) -> tuple[QuerySet[LatestResult], str]:
    """Nodes' board values of ``filters.metric`` in one profile, best first."""
    metric = metric_of(filters.metric)
    profile = profile_for(filters)
    return filtered(filters, profile).order_by(*ordering(metric)), profile


def host_reported(filters: Filters, profile: str, limit: int = 200) -> list[LatestResult]:
    """Nodes with figures below the rungs the ranking stands on (their host's claims):
    listed apart, unranked, so a buyer sees them without their claims outranking anyone."""
    if filters.evidence_class() == LatestResult.ANY:
        return []
    # Which nodes: those with a figure of the metric but none of the ranked class, an
    # anti-join read from the index alone (latest_node_by_class); the node's own filters
    # hold already, so they are applied once, to the rows of those nodes only. Over the
    # table's rows the anti-join read every node's row twice: 24 ms at 10,000 nodes (#35).
    def holders(evidence: str) -> QuerySet[LatestResult]:
        return LatestResult.objects.filter(metric=filters.metric, evidence=evidence,
                                           profile=profile, stand_in=False)

    ranked_class = filters.evidence_class()
    candidates = holders(LatestResult.ANY)
    if ranked_class == LatestResult.MEASURED:
        # Without a measured figure a node has only its host's word in its "any" row, whose
        # grade is then the ladder's lowest: only such rows need the anti-join, read from
        # their partial index (latest_host_reported), not every node's.
        candidates = candidates.filter(grade=Sample.HOST_REPORTED)
    claims = candidates.exclude(Exists(holders(ranked_class).filter(
        node_id=OuterRef("node_id")))).values("node_id")
    rows = (filtered(filters, profile, LatestResult.ANY).filter(node_id__in=claims)
            .order_by(*ordering(metric_of(filters.metric))))
    return list(rows[:limit])


def is_stale(measured_at: Any) -> bool:
    return bool(measured_at < timezone.now() - timedelta(days=settings.LEADERBOARD_STALE_DAYS))


def node_values(node_ids: Iterable[int], profile: str,
                evidence: str = "") -> dict[int, dict[str, float]]:
    """Every board value of these nodes in one profile and evidence class (as the ranking
    reads ``evidence``: empty is measured): node -> metric -> value. Not a CPU's stand-in
    for a GPU figure: what is scored, starred and diagnosed is a GPU's or nothing."""
    values: dict[int, dict[str, float]] = defaultdict(dict)
    for node_id, metric, value in LatestResult.objects.filter(
            node_id__in=list(node_ids), profile=profile, evidence=evidence_class(evidence),
            stand_in=False).values_list("node_id", "metric", "value"):
        values[node_id][metric] = value
    return values


def gpu_unmeasured(node: Node, values: Mapping[str, float]) -> bool:
    """A node that enrolled a GPU and has no GPU figure of its own on the board (#32): the
    board and the compare page say "GPU not measured" rather than a CPU's figure or "–"."""
    return node.claims_gpu and not any(m.startswith(f"{metrics.GPU_FAMILY}.") for m in values)


@dataclass
class Entry:
    """One leaderboard row: the ranked value, and what a buyer decides on beside it."""

    rank: int
    row: LatestResult
    stale: bool
    score: score.Score
    price_per_score: float | None
    price_per_throughput: float | None
    findings: list[diagnosis.Finding] = field(default_factory=list)
    # The ranked figure across the platform's re-tests at different hours.
    stability: stability.Stability | None = None
    # Not yet a week of the platform's re-tests: a first impression, not a record.
    new: bool = False


def entries(rows: list[LatestResult], profile: str, first_rank: int = 1,
            evidence: str = "") -> list[Entry]:
    ids = [r.node_id for r in rows]
    # Scored, priced and starred on measured figures only, whichever rows are shown; the
    # diagnosis reads what the board shows (a host's claims, where it shows them).
    measured = node_values(ids, profile)
    shown = measured if evidence_class(evidence) == LatestResult.MEASURED else node_values(
        ids, profile, evidence)
    watched = {*stability_board.WATCHED, *(r.metric for r in rows[:1])}
    # Read once for both, from the rows' nodes' own predecessors first.
    hosts = identity.lineage(ids, {r.node_id: r.node.predecessor_id for r in rows}) if rows else {}
    stable = stability_board.figures(ids, watched, hosts=hosts) if rows else {}
    fresh = stability_board.new_nodes(ids, hosts=hosts) if rows else set()
    out = []
    for i, row in enumerate(rows):
        mine = stable.get(row.node_id, {})
        v = stability_board.scored(measured.get(row.node_id, {}), mine)
        try:
            s = score.score(v)
        except (ArithmeticError, ValueError, TypeError):
            s = score.Score(None, {})  # shown as "–": the row and the page still render
        price = row.node.monthly_price_cny
        throughput = v.get(THROUGHPUT_METRIC)
        out.append(Entry(
            rank=first_rank + i, row=row, stale=is_stale(row.measured_at), score=s,
            price_per_score=round(price / s.value, 2) if price and s.value else None,
            price_per_throughput=round(price / throughput, 4) if price and throughput else None,
            findings=diagnosis.diagnose(stability_board.scored(shown.get(row.node_id, {}), mine))
            + [f for m, st in mine.items() if (f := stability_board.finding(m, st))],
            stability=mine.get(row.metric), new=row.node_id in fresh))
    return out


@dataclass(frozen=True)
class Group:
    key: str
    name: str
    kind: str  # province, city, provider, kind
    nodes: int
    median: float  # the middle node's figure (of two in the middle, the worse): a node's own
    p5: float
    p95: float
    provider_kind: str = ""
    node: str = ""  # the node whose figure the median is


def middle(ordered: list[tuple[float, str]], higher_is_better: bool) -> tuple[float, str]:
    """The middle node of a group sorted by figure; with an even count, the worse of the two
    in the middle. Never their mean (#32): Zhejiang at 5.19 Gbit/s, the mean of a 9.43 and a
    0.956 node, was a figure no node there has."""
    if len(ordered) % 2:
        return ordered[len(ordered) // 2]
    low, high = ordered[len(ordered) // 2 - 1], ordered[len(ordered) // 2]
    return low if higher_is_better else high


def groups(filters: Filters, by: str) -> tuple[list[Group], str]:
    """The middle node's figure and the spread across nodes of each province and city, of
    each provider, or of each provider kind."""
    found, profile = groupings(filters, (by,))
    return found[by], profile


def groupings(filters: Filters, bys: tuple[str, ...]) -> tuple[dict[str, list[Group]], str]:
    """``groups`` by each of ``bys`` from one read of the board: a page that charts regions
    and provider kinds reads every node once, not once a chart (#35)."""
    metric = metric_of(filters.metric)
    profile = profile_for(filters)
    buckets: dict[str, dict[tuple[str, str, str, str], list[tuple[float, str]]]] = {
        by: defaultdict(list) for by in bys}
    # Tuples, not model rows: every node on the board is read (10,000 rows as models with
    # their node, provider and region took 1.9 s a call, twice a board page, #35). Each row
    # goes to its provider and place once; the groups are made of those few (a row's way
    # through every grouping was a fifth of a 10,000-node board page, #35).
    places: dict[tuple[int, int], list[tuple[float, str]]] = defaultdict(list)
    for value, name, provider_id, region_id in filtered(filters, profile).values_list(
            "value", "node__name", "node__provider_id", "node__region_id"):
        places[(provider_id, region_id)].append((value, name))
    # Each place's figures sorted once: a group is a few places' runs, which the group's own
    # sort merges in one pass (three full sorts of 10,000 nodes took 9 ms a page, #35).
    for figures in places.values():
        figures.sort()
    # The few providers and regions by id, not their names in every node's row.
    providers = {pk: (name, kind) for pk, name, kind in Provider.objects.filter(
        pk__in={p for p, _ in places}).values_list("pk", "name", "kind")}
    regions = {pk: (province, code, city) for pk, province, code, city in Region.objects.filter(
        pk__in={r for _, r in places}).values_list("pk", "province", "code", "city")}
    for (provider_id, region_id), figures in places.items():
        if provider_id not in providers or region_id not in regions:
            continue  # its node and then its provider went between the two reads
        (provider, kind), (province, code, city) = providers[provider_id], regions[region_id]
        for by, bucket in buckets.items():
            if by == "provider":
                bucket[("provider", str(provider_id), provider, kind)] += figures
            elif by == "kind":  # local data centres against cloud, the seeds' own comparison
                bucket[("kind", kind, kind, kind)] += figures
            else:
                bucket[("province", province.lower(), province, "")] += figures
                bucket[("city", code, f"{province} / {city}", "")] += figures
    return {by: summarised(bucket, metric) for by, bucket in buckets.items()}, profile


def summarised(buckets: Mapping[tuple[str, str, str, str], list[tuple[float, str]]],
               metric: metrics.Metric) -> list[Group]:
    out = []
    for (kind, key, label, provider_kind), found in buckets.items():
        ordered = sorted(found)
        values = [v for v, _ in ordered]
        value, name = middle(ordered, metric.higher_is_better)
        out.append(Group(key=key, name=label, kind=kind, nodes=len(ordered), median=value,
                         p5=percentile(values, 5), p95=percentile(values, 95),
                         provider_kind=provider_kind, node=name))
    out.sort(key=lambda g: (g.kind not in ("province", "kind"),
                            -g.median if metric.higher_is_better else g.median))
    return out


HISTORY_PAGE = 500
HISTORY_MAX_PAGE = 2000


def history(node: Node, metric_name: str, after: tuple[Any, int] | None = None,
            limit: int = HISTORY_PAGE, viewer: Any = None) -> list[dict[str, Any]]:
    """Succeeded measurements of one metric on one node (its buyers' trial agents' among
    them), oldest first: the ranked ones, and the ``viewer``'s own unranked ones (each says
    so: custom parameters, or a suite that does not rank), never another buyer's
    (jobs.services.visibility); at most ``limit`` of them, after the (finished_at, sample
    id) of the previous page."""
    metric_of(metric_name)
    # The node and its trial agents by id: an OR across the join to fleet_node read every
    # run of the record (a sequential scan, 50 ms at 143,000 runs, a year's 14 million
    # would take seconds); by ids it is the node's own runs from their index.
    agents = [node.pk, *Node.objects.filter(trial_of=node).values_list("pk", flat=True)]
    samples = (visibility.visible(
        Sample.objects.filter(run__node_id__in=agents, metric=metric_name,
                              run__status="succeeded"), viewer, "run__")
               .select_related("run__job").order_by("run__finished_at", "id"))
    if after is not None:
        samples = samples.filter(Q(run__finished_at__gt=after[0])
                                 | Q(run__finished_at=after[0], id__gt=after[1]))
    return [{"sample": s.pk, "measured_at": s.run.finished_at, "value": s.value, "unit": s.unit, "p5": s.p5,
             "p95": s.p95, "n": s.n, "profile": s.run.job.profile, "run": s.run_id,
             "peer": s.metadata.get("peer"), "ranked": s.run.ranked,
             # The 95% interval of the median its repetitions reached, against the precision
             # its profile states (contract/precision.py).
             "interval": s.metadata.get("interval"), "precision": s.metadata.get("precision"),
             "noisy": bool(s.metadata.get("noisy")),
             "note": "" if s.run.ranked else UNRANKED_LABEL, "evidence": s.evidence,
             "evidence_source": s.evidence_source, "requested_by": s.run.requested_by}
            for s in samples[:min(limit, HISTORY_MAX_PAGE)]]

