"""Nodes ranked on their latest value of a metric, in the API and on the web page."""

from __future__ import annotations

from typing import Any

import pytest
from django.test import Client

from jobs.services import lifecycle, submission


def measured(buyer: Any, enrolled: Any, gbps: float) -> None:
    job, _ = submission.submit(buyer.user, [enrolled.node.pk], "network")
    claim = lifecycle.claim(enrolled.node, job.runs.get().pk)
    sample = {"metric": "network.tcp_throughput", "value": gbps, "unit": "Gbit/s", "n": 3,
              "p5": gbps * 0.9, "p95": gbps * 1.1, "min": None, "max": None, "cv": 0.02,
              "metadata": {}}
    lifecycle.finish(enrolled.node, claim.run.pk, claim.attempt.id, True, [sample], "", {})


@pytest.fixture
def board(buyer: Any, enrol_node: Any, shenzhen: Any) -> None:
    hz1, hz2, sz1 = enrol_node("hz-1"), enrol_node("hz-2"), enrol_node("sz-1", region=shenzhen)
    measured(buyer, hz1, 5.0)
    measured(buyer, hz2, 9.0)
    measured(buyer, sz1, 7.0)
    measured(buyer, hz1, 1.0)  # hz-1's latest result replaces its earlier one


def names(rows: list[dict[str, Any]]) -> list[str]:
    return [row["node"]["name"] for row in rows]


def test_nodes_are_ranked_best_first_on_their_latest_value(board: None, buyer: Any) -> None:
    rows = buyer.client().get("/api/v1/leaderboard?metric=network.tcp_throughput").json()
    assert names(rows) == ["hz-2", "sz-1", "hz-1"]
    assert [r["rank"] for r in rows] == [1, 2, 3]
    assert rows[2]["value"] == 1.0
    assert rows[0]["node"]["provider"] == "West Lake DC"


def test_a_region_filter_takes_a_province_or_a_city(board: None, buyer: Any) -> None:
    client = buyer.client()
    assert names(client.get("/api/v1/leaderboard?region=zhejiang").json()) == ["hz-2", "hz-1"]
    assert names(client.get("/api/v1/leaderboard?region=shenzhen").json()) == ["sz-1"]


def test_an_unknown_metric_is_a_400(board: None, buyer: Any) -> None:
    response = buyer.client().get("/api/v1/leaderboard?metric=gpu.vibes")
    assert response.status_code == 400
    assert "metric" in response.json()["errors"]


def test_the_web_page_shows_the_same_ranking(board: None) -> None:
    html = Client().get("/?metric=network.tcp_throughput").content.decode()
    assert html.index("hz-2") < html.index("sz-1") < html.index("hz-1")
    assert "Guangdong / Shenzhen" in html
