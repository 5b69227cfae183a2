"""The region, provider and kind groups, aggregated in the database, are the groups a reader
would make by hand from the board's rows: each group's middle node (of two, the worse),
named, and the spread across its nodes."""

from __future__ import annotations

import random
from collections import defaultdict
from typing import Any

import pytest

from board.ranking import Filters, filtered, groupings, middle
from contract import metrics
from contract.sample import percentile
from fleet.models import Node, Provider, Region
from tests.fixtures import measured


def by_hand(filters: Filters, profile: str, by: str) -> list[tuple[Any, ...]]:
    """Each group as the reader makes it: sorted by value then name, the middle taken."""
    higher = metrics.METRICS[filters.metric].higher_is_better
    buckets: dict[tuple[str, str, str, str], list[tuple[float, str]]] = defaultdict(list)
    for row in filtered(filters, profile).select_related("node__provider", "node__region"):
        node, figure = row.node, (row.value, row.node.name)
        if by == "provider":
            buckets[("provider", str(node.provider_id), node.provider.name,
                     node.provider.kind)].append(figure)
        elif by == "kind":
            buckets[("kind", node.provider.kind, node.provider.kind,
                     node.provider.kind)].append(figure)
        else:
            region = node.region
            buckets[("province", region.province.lower(), region.province, "")].append(figure)
            buckets[("city", region.code, f"{region.province} / {region.city}", "")].append(
                figure)
    out = []
    for (kind, key, label, provider_kind), found in buckets.items():
        ordered = sorted(found)
        value, name = middle(ordered, higher)
        values = [v for v, _ in ordered]
        out.append((kind, key, label, provider_kind, len(ordered), value, name,
                    percentile(values, 5), percentile(values, 95)))
    return sorted(out)


def as_tuples(groups: list[Any]) -> list[tuple[Any, ...]]:
    return sorted((g.kind, g.key, g.name, g.provider_kind, g.nodes, g.median, g.node, g.p5,
                   g.p95) for g in groups)


def rounded(groups: list[tuple[Any, ...]]) -> list[tuple[Any, ...]]:
    """p5 and p95 interpolated in the database's floating point and Python's alike."""
    return [tuple(round(v, 9) if isinstance(v, float) else v for v in g) for g in groups]


@pytest.fixture
def fleet(buyer: Any, enrol_node: Any, hangzhou: Region, shenzhen: Region) -> None:
    ningbo = Region.objects.create(code="ningbo", province="Zhejiang", city="Ningbo")
    cloud = Provider.objects.create(name="Qiantang Cloud", kind=Provider.Kind.CLOUD)
    draw = random.Random(35)
    # Ties on purpose (a value drawn from a few), names whose code-point order is not a
    # dictionary's ("B-2" before "a-1"), even and odd groups, a city of one node.
    places = [hangzhou] * 5 + [ningbo] * 4 + [shenzhen] * 3
    names = ["a-1", "B-2", "b-3", "A-4", "hz-5", "Nb-1", "nb-2", "ZZ", "zz", "sz-1", "Sz-2", "é-3"]
    for i, (region, name) in enumerate(zip(places, names, strict=True)):
        node = enrol_node(name, region=region)
        if i % 3 == 0:
            Node.objects.filter(pk=node.node.pk).update(provider=cloud)
        measured(buyer, node, draw.choice([1.0, 2.5, 2.5, 9.4, 9.4, 0.25]),
                 extra={"network.tcp_rtt": draw.choice([0.2, 0.2, 1.5, 3.0, 12.0])})


@pytest.mark.parametrize("metric", ["network.tcp_throughput", "network.tcp_rtt"])
@pytest.mark.parametrize("region", ["", "zhejiang"])
def test_groups_from_the_database_are_the_groups_made_by_hand(fleet: None, metric: str,
                                                              region: str) -> None:
    filters = Filters(metric=metric, region=region, evidence="any")
    found, profile = groupings(filters, ("region", "provider", "kind"))
    for by in ("region", "provider", "kind"):
        assert rounded(as_tuples(found[by])) == rounded(by_hand(filters, profile, by)), by
    assert sum(g.nodes for g in found["region"] if g.kind == "province") == (
        12 if not region else 9)
    # Best first, provinces before cities: a chart reads them in this order.
    provinces = [g.median for g in found["region"] if g.kind == "province"]
    higher = metrics.METRICS[metric].higher_is_better
    assert provinces == sorted(provinces, reverse=higher)
    assert [g.kind for g in found["region"]] == sorted(
        (g.kind for g in found["region"]), key=lambda k: k != "province")


def test_a_board_with_no_figures_has_no_groups(fleet: None) -> None:
    found, _ = groupings(Filters(metric="storage.randread_iops", evidence="any"),
                         ("region", "kind"))
    assert found == {"region": [], "kind": []}
