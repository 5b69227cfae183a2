"""A board page kept until the record changes (#35): served from memory while nothing it
shows has changed, and never after: a new result, a node revoked, a certificate revoked, a
re-test settled. What one reader adds (a buyer's site) is never kept for another; junk
parameters never make copies; each language keeps its own page."""

from __future__ import annotations

from datetime import timedelta
from typing import Any

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext
from django.utils import timezone

from certification.models import Certificate
from certification.services import issuing
from fleet.services import generation, revocation
from tests.fixtures import measured

BOARD = "/api/v1/leaderboard?metric=network.tcp_throughput&evidence=any"


@pytest.fixture
def nodes(buyer: Any, enrol_node: Any) -> dict[str, Any]:
    hz1, hz2 = enrol_node("hz-1"), enrol_node("hz-2")
    measured(buyer, hz1, 5.0)
    measured(buyer, hz2, 9.0)
    return {"hz-1": hz1, "hz-2": hz2}


def fetched(client: Any, url: str = BOARD) -> tuple[dict[str, Any], int]:
    with CaptureQueriesContext(connection) as queries:
        response = client.get(url)
    assert response.status_code == 200, response.content[:300]
    return response.json(), len(queries)


def names(page: dict[str, Any]) -> list[str]:
    return [row["node"]["name"] for row in page["results"]]


def test_a_page_asked_for_again_is_served_from_memory(nodes: Any, buyer: Any) -> None:
    client = buyer.client()
    first, computed = fetched(client)
    again, kept = fetched(client)
    assert again == first and names(first) == ["hz-2", "hz-1"]
    # The caller's token and the generation: none of the page's own queries.
    assert kept <= 2 < computed


def test_a_new_result_shows_at_once(nodes: Any, buyer: Any) -> None:
    client = buyer.client()
    assert names(fetched(client)[0]) == ["hz-2", "hz-1"]
    before = generation.current()
    measured(buyer, nodes["hz-1"], 7.0)
    assert generation.current() > before
    page = fetched(client)[0]
    hz1 = next(r for r in page["results"] if r["node"]["name"] == "hz-1")
    assert hz1["runs"] == 2 and hz1["run_max"] == 7.0


def test_a_revoked_node_leaves_the_page_at_once(nodes: Any, buyer: Any) -> None:
    client = buyer.client()
    assert names(fetched(client)[0]) == ["hz-2", "hz-1"]
    # A bulk update, no signal: the revocation moves the generation itself.
    revocation.revoke(nodes["hz-2"].node, "sold")
    assert names(fetched(client)[0]) == ["hz-1"]


def test_a_revoked_certificate_leaves_the_certified_page_at_once(nodes: Any, buyer: Any) -> None:
    now = timezone.now()
    cert = Certificate.objects.create(
        node=nodes["hz-1"].node, profile="single-node-training", tier="gold", document={},
        signature="x", issued_at=now, expires_at=now + timedelta(days=30))
    client = buyer.client()
    assert names(fetched(client, BOARD + "&certified=1")[0]) == ["hz-1"]
    issuing.revoke(cert, "failed a re-test")
    assert names(fetched(client, BOARD + "&certified=1")[0]) == []


def test_the_generation_moves_again_once_the_change_has_committed(
        nodes: Any, django_capture_on_commit_callbacks: Any) -> None:
    # A page computed between the change and its commit read the data before it: kept
    # under the change's first number, it is never read after the commit.
    with django_capture_on_commit_callbacks(execute=True):
        generation.changed()
        during = generation.current()
    assert generation.current() > during


def test_junk_parameters_share_the_page_and_stay_out_of_its_links(
        nodes: Any, buyer: Any, monkeypatch: Any) -> None:
    monkeypatch.setattr("api.views.leaderboard.PAGE_SIZE", 1)
    client = buyer.client()
    first, _ = fetched(client)
    junk, kept = fetched(client, BOARD + "&junk=1&utm_source=x")
    assert junk == first and kept <= 2
    assert "junk" not in first["next"] and "cursor=" in first["next"]
    assert names(fetched(client, first["next"])[0]) == ["hz-1"]


def test_a_buyers_site_figures_are_never_kept_for_another(nodes: Any, buyer: Any,
                                                          other_buyer: Any) -> None:
    site = buyer.client().post("/api/v1/sites", {"name": "Office", "city": "hangzhou"},
                               format="json")
    assert site.status_code == 201, site.content
    mine, _ = fetched(buyer.client(), BOARD + f"&site={site.json()['id']}")
    assert all("site" in row for row in mine["results"])
    theirs, _ = fetched(other_buyer.client())
    assert all("site" not in row for row in theirs["results"])
    # Nor can another buyer read the site through the page.
    assert other_buyer.client().get(BOARD + f"&site={site.json()['id']}").status_code == 404


def test_each_language_keeps_its_own_page(nodes: Any, buyer: Any) -> None:
    measured(buyer, nodes["hz-1"], 5.0, extra={"network.tcp_rtt": 25.0})
    client = buyer.client()
    english = fetched(client, BOARD + "&metric=network.tcp_rtt")[0]
    chinese = client.get(BOARD + "&metric=network.tcp_rtt", HTTP_ACCEPT_LANGUAGE="zh-hans").json()
    said = [f["verdict"] for r in english["results"] for f in r["diagnosis"]]
    said_zh = [f["verdict"] for r in chinese["results"] for f in r["diagnosis"]]
    assert said and said_zh and said != said_zh
    assert "ms to its region's reference endpoint" in said[0]


def test_with_no_time_to_keep_every_request_computes_its_page(nodes: Any, buyer: Any,
                                                              settings: Any) -> None:
    settings.BOARD_PAGE_SECONDS = 0
    client = buyer.client()
    _, first = fetched(client)
    _, second = fetched(client)
    assert second == first > 2
