"""Nodes ranked like with like, in the API (JSON and CSV) and on the web page."""

from __future__ import annotations

from datetime import timedelta
from typing import Any

import pytest
from django.test import Client
from django.utils import timezone

from board.models import LatestResult
from fleet.models import Node
from tests.fixtures import measured, trial_agent


@pytest.fixture
def nodes(buyer: Any, enrol_node: Any, shenzhen: Any) -> dict[str, Any]:
    hz1, hz2, sz1 = enrol_node("hz-1"), enrol_node("hz-2"), enrol_node("sz-1", region=shenzhen)
    measured(buyer, hz1, 5.0)
    measured(buyer, hz2, 9.0)
    measured(buyer, sz1, 7.0)
    measured(buyer, hz1, 1.0)  # hz-1's board value is the median of its two runs
    return {"hz-1": hz1, "hz-2": hz2, "sz-1": sz1}


def names(page: dict[str, Any]) -> list[str]:
    return [row["node"]["name"] for row in page["results"]]


def test_nodes_are_ranked_best_first_on_the_median_of_their_runs(nodes: Any, buyer: Any) -> None:
    page = buyer.client().get("/api/v1/leaderboard?metric=network.tcp_throughput&evidence=any").json()
    assert names(page) == ["hz-2", "sz-1", "hz-1"]
    assert [r["rank"] for r in page["results"]] == [1, 2, 3]
    hz1 = page["results"][2]
    assert (hz1["value"], hz1["runs"], hz1["run_min"], hz1["run_max"]) == (3.0, 2, 1.0, 5.0)
    assert page["profile"] == "default" and page["evidence"] == "any"
    assert (hz1["evidence"], hz1["requested_by"]) == ("host-reported", "buyer")
    assert page["results"][0]["node"]["provider"] == "West Lake DC"


def test_only_like_is_compared_with_like(nodes: Any, buyer: Any) -> None:
    measured(buyer, nodes["sz-1"], 9.5, profile="quick")
    client = buyer.client()
    default = client.get("/api/v1/leaderboard?evidence=any&profile=default").json()
    assert names(default) == ["hz-2", "sz-1", "hz-1"]
    assert names(client.get("/api/v1/leaderboard?evidence=any&profile=quick").json()) == ["sz-1"]


def test_a_region_filter_takes_a_province_or_a_city(nodes: Any, buyer: Any) -> None:
    client = buyer.client()
    assert names(client.get("/api/v1/leaderboard?evidence=any&region=zhejiang").json()) == ["hz-2", "hz-1"]
    assert names(client.get("/api/v1/leaderboard?evidence=any&region=shenzhen").json()) == ["sz-1"]
    assert names(client.get("/api/v1/leaderboard?evidence=any&provider_kind=cloud").json()) == []
    # Enrolled from an inventory without a GPU: "none", as the filter's documentation says.
    assert names(client.get("/api/v1/leaderboard?evidence=any&gpu_model=none").json()) == [
        "hz-2", "sz-1", "hz-1"]
    assert names(client.get("/api/v1/leaderboard?evidence=any&gpu_model=A100").json()) == []


def test_old_results_are_marked_stale(nodes: Any, buyer: Any, settings: Any) -> None:
    LatestResult.objects.filter(node=nodes["hz-2"].node).update(
        measured_at=timezone.now() - timedelta(days=settings.LEADERBOARD_STALE_DAYS + 1))
    rows = buyer.client().get("/api/v1/leaderboard?evidence=any").json()["results"]
    assert {r["node"]["name"]: r["stale"] for r in rows} == {"hz-2": True, "sz-1": False, "hz-1": False}


def test_pages_follow_a_cursor_without_gaps_or_repeats(nodes: Any, buyer: Any, monkeypatch: Any) -> None:
    monkeypatch.setattr("api.views.leaderboard.PAGE_SIZE", 2)
    client = buyer.client()
    first = client.get("/api/v1/leaderboard?evidence=any").json()
    second = client.get(first["next"]).json()
    assert names(first) + names(second) == ["hz-2", "sz-1", "hz-1"]
    assert [r["rank"] for r in second["results"]] == [3] and second["next"] is None
    assert client.get("/api/v1/leaderboard?evidence=any&cursor=garbage").status_code == 400


def test_csv_export_has_a_header_and_a_row_per_node(nodes: Any, buyer: Any) -> None:
    response = buyer.client().get("/api/v1/leaderboard?evidence=any&format=csv")
    assert response["Content-Type"].startswith("text/csv")
    lines = response.content.decode("utf-8-sig").strip().splitlines()
    assert lines[0].startswith("rank,node.id,node.name")
    assert len(lines) == 4 and ",hz-2," in lines[1]


def test_region_and_provider_views_give_median_spread_and_node_count(nodes: Any, buyer: Any) -> None:
    regions = buyer.client().get("/api/v1/leaderboard/regions?evidence=any").json()["results"]
    zhejiang = next(g for g in regions if g["kind"] == "province" and g["key"] == "zhejiang")
    # hz-1's 3.0 and hz-2's 9.0: the worse of the two middle nodes, named, never their mean
    # (6.0, a figure no node in Zhejiang has: #32), with the spread across both.
    assert (zhejiang["nodes"], zhejiang["median"], zhejiang["node"]) == (2, 3.0, "hz-1")
    assert zhejiang["p5"] == pytest.approx(3.3) and zhejiang["p95"] == pytest.approx(8.7)
    providers = buyer.client().get("/api/v1/leaderboard/providers?evidence=any").json()["results"]
    assert [(p["name"], p["nodes"], p["provider_kind"]) for p in providers] == [
        ("West Lake DC", 3, "local_dc")]


def test_a_group_figure_is_its_middle_nodes_own() -> None:
    from board.ranking import middle

    three = [(1.0, "a"), (5.0, "b"), (9.0, "c")]
    assert middle(three, higher_is_better=True) == middle(three, False) == (5.0, "b")
    two = [(0.956, "nb"), (9.43, "hz")]  # the demo's Zhejiang: 5.19 was their mean
    assert middle(two, higher_is_better=True) == (0.956, "nb")  # throughput: the slower
    assert middle(two, higher_is_better=False) == (9.43, "hz")  # latency: the longer


def test_history_lists_every_measurement_oldest_first(nodes: Any, buyer: Any) -> None:
    node_id = nodes["hz-1"].node.pk
    points = buyer.client().get(f"/api/v1/nodes/{node_id}/history?metric=network.tcp_throughput").json()
    assert [p["value"] for p in points["results"]] == [5.0, 1.0]
    assert [(p["interval"], p["noisy"]) for p in points["results"]] == [(None, False)] * 2


def test_history_shows_the_interval_each_figure_reached(buyer: Any, enrol_node: Any) -> None:
    node = enrol_node("hz-1")
    measured(buyer, node, 9.4, metadata={"network.tcp_throughput": {
        "interval": [9.3, 9.5], "precision": 0.02}})
    measured(buyer, node, 9.0, metadata={"network.tcp_throughput": {
        "interval": [8.1, 9.9], "precision": 0.02, "noisy": True}})
    points = buyer.client().get(
        f"/api/v1/nodes/{node.node.pk}/history?metric=network.tcp_throughput").json()["results"]
    assert [(p["interval"], p["precision"], p["noisy"]) for p in points] == [
        ([9.3, 9.5], 0.02, False), ([8.1, 9.9], 0.02, True)]


def test_price_performance_uses_the_providers_price(nodes: Any, buyer: Any,
                                                    provider_owner: Any) -> None:
    hz2 = nodes["hz-2"]
    # 2 ranks of batch 32 at 128 ms a step: 500 samples/s.
    training = {"training.samples_per_s": 500.0, "training.step_time": 128.0}
    core = {"network.tcp_rtt": 1.0, "storage.randread_iops": 100_000.0, "storage.randread_lat_mean": 320.0,
            "storage.checkpoint_write": 1.0}
    measured(buyer, hz2, 9.0, extra=training | core)
    response = provider_owner.client().post(f"/api/v1/nodes/{hz2.node.pk}/price",
                                            {"monthly_price_cny": 20000}, format="json")
    assert response.status_code == 200
    assert buyer.client().post(f"/api/v1/nodes/{hz2.node.pk}/price", {"monthly_price_cny": 1},
                               format="json").status_code == 404
    # The host's own word prices nothing: no score, no price per sample/s.
    row = buyer.client().get("/api/v1/leaderboard?evidence=any").json()["results"][0]
    assert (row["node"]["name"], row["monthly_price_cny"]) == ("hz-2", 20000)
    assert (row["score"]["value"], row["price_per_throughput"], row["price_per_score"]) == (
        None, None, None)
    # A buyer's trial of it measures the same: priced on the buyer's figures.
    measured(buyer, trial_agent(buyer, hz2), 9.0, extra=training | core)
    row = buyer.client().get("/api/v1/leaderboard?evidence=any").json()["results"][0]
    assert row["monthly_price_cny"] == 20000
    assert row["price_per_throughput"] == 40.0
    assert row["price_per_score"] == pytest.approx(20000 / row["score"]["value"], rel=1e-3)


def test_an_unknown_metric_is_a_400(nodes: Any, buyer: Any) -> None:
    response = buyer.client().get("/api/v1/leaderboard?evidence=any&metric=gpu.vibes")
    assert response.status_code == 400
    assert "metric" in response.json()["errors"]


def test_the_web_page_shows_the_same_ranking(nodes: Any) -> None:
    html = Client().get("/?metric=network.tcp_throughput&evidence=any").content.decode()
    html = html[html.index('id="leaderboard"'):]  # the table, under the verdict that names them too
    assert html.index("hz-2") < html.index("sz-1") < html.index("hz-1")
    assert "Guangdong" in html


def test_the_certification_page_lists_the_published_thresholds(db: Any) -> None:
    html = Client().get("/certification/").content.decode()
    assert "single-node-training v2" in html and "multi-node-training v2" in html
    # Thresholds with their units, as people read them (the metric id stays on the row).
    assert 'data-metric="storage.randread_iops"' in html and "≥ 10,000 IOPS" in html
    assert "≥ 0.9 Gbit/s (what a 1 GbE link measures)" in html and "≤ 30%<" in html


def test_a_filter_with_a_nul_byte_or_a_bad_budget_is_a_400(nodes: Any, buyer: Any) -> None:
    # PostgreSQL text cannot hold NUL: the filter is refused before it reaches the database.
    response = buyer.client().get("/api/v1/leaderboard?evidence=any&gpu_model=A%00100")
    assert response.status_code == 400 and "gpu_model" in response.json()["errors"]
    response = buyer.client().get("/api/v1/leaderboard?evidence=any&max_price=cheap")
    assert response.status_code == 400 and "max_price" in response.json()["errors"]
    assert Client().get("/en/?max_price=cheap").status_code == 400


def test_a_budget_keeps_only_nodes_priced_within_it(nodes: Any, buyer: Any) -> None:
    Node.objects.filter(name="hz-1").update(monthly_price_cny=30_000)
    Node.objects.filter(name="hz-2").update(monthly_price_cny=12_000)
    body = buyer.client().get("/api/v1/leaderboard?evidence=any&max_price=20000").json()
    assert [r["node"]["name"] for r in body["results"]] == ["hz-2"]  # sz-1 has no price: out


def test_a_board_row_shows_its_node_as_the_node_serializer_does(nodes: Any, buyer: Any,
                                                                enrol_node: Any) -> None:
    """The board writes its rows' nodes as plain dicts (#35): the same fields and values as
    NodeSerializer, times in the same form, a predecessor and a trial included."""
    from api.serializers import NodeSerializer, node_brief

    node = Node.objects.get(pk=nodes["hz-1"].node.pk)
    node.predecessor = nodes["sz-1"].node
    node.last_seen_at = timezone.now() - timedelta(seconds=5)
    node.revoked_reason = "moved racks"
    node.save()
    agent = trial_agent(buyer, nodes["hz-2"]).node
    agent.trial_ends_at = timezone.now() + timedelta(days=2)
    agent.save()
    for shown in (node, agent, Node.objects.get(pk=nodes["sz-1"].node.pk)):
        assert node_brief(shown) == dict(NodeSerializer(shown).data)
    page = buyer.client().get("/api/v1/leaderboard?evidence=any").json()
    row = next(r for r in page["results"] if r["node"]["name"] == "hz-1")
    assert row["node"] == dict(NodeSerializer(node).data) and row["node"]["predecessor"] == (
        nodes["sz-1"].node.pk)
