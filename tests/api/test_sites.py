"""The sites API: a buyer's own places, their probe tokens, and the answers to bad input."""

from __future__ import annotations

from typing import Any

import pytest

from fleet.services import secrets
from jobs.models import SiteProbe
from jobs.services import site_probes
from tests.fixtures import measured

pytestmark = pytest.mark.django_db


def test_a_site_takes_its_city_in_either_language_and_refuses_an_unknown_one(buyer: Any) -> None:
    client = buyer.client()
    made = client.post("/api/v1/sites", {"name": "Hangzhou office", "city": "杭州"}, format="json")
    assert made.status_code == 201 and made.json()["city"] == "Hangzhou"
    unknown = client.post("/api/v1/sites", {"name": "Lab", "city": "Atlantis"}, format="json")
    assert unknown.status_code == 400 and "Hangzhou" in unknown.json()["detail"]
    again = client.post("/api/v1/sites", {"name": "Hangzhou office", "city": "Ningbo"},
                        format="json")
    assert again.status_code == 409 and "already" in again.json()["detail"]
    assert [s["name"] for s in client.get("/api/v1/sites").json()] == ["Hangzhou office"]


def test_probe_tokens_refuse_what_cannot_be_probed(buyer: Any, enrol_node: Any) -> None:
    client = buyer.client()
    site = client.post("/api/v1/sites", {"name": "Office", "city": "Hangzhou"},
                       format="json").json()
    url = f"/api/v1/sites/{site['id']}/probes"
    hidden = enrol_node("hz-noaddr")
    assert client.post(url, {"nodes": [999999]}, format="json").status_code == 404
    assert client.post(url, {"region": "atlantis"}, format="json").status_code == 404
    no_address = client.post(url, {"nodes": [hidden.node.pk]}, format="json")
    assert no_address.status_code == 422 and "--address" in no_address.json()["detail"]
    assert client.post(url, {}, format="json").status_code == 400
    assert client.post(url, {"nodes": list(range(1, 18))}, format="json").status_code == 400
    assert client.post("/api/v1/sites/999999/probes", {"nodes": [1]},
                       format="json").status_code == 404


def test_a_token_opens_only_its_own_node_once(buyer: Any, enrol_node: Any) -> None:
    a = enrol_node("hz-a", address="127.0.0.1")
    b = enrol_node("hz-b", address="127.0.0.2")
    site = site_probes.create_site(buyer.user, "Office", "Hangzhou")
    (issued,) = site_probes.issue(site, [a.node.pk])
    claim = "/api/v1/node/probes/claim"
    assert b.client().post(claim, {"token": issued.token}, format="json").status_code == 404
    first = a.client().post(claim, {"token": issued.token}, format="json")
    assert first.status_code == 200 and first.json()["username"] == f"probe{issued.probe.pk}"
    used = a.client().post(claim, {"token": issued.token}, format="json")
    assert used.status_code == 409 and "used" in used.json()["detail"]
    # Only a digest is kept: the token itself is nowhere in the database.
    assert SiteProbe.objects.get().token_hash == secrets.digest(issued.token)
    # A buyer's token is no node key.
    assert buyer.client().post(claim, {"token": issued.token}, format="json").status_code in (
        401, 403)


def test_results_come_once_after_the_node_took_the_token(buyer: Any, other_buyer: Any,
                                                         enrol_node: Any) -> None:
    a = enrol_node("hz-a", address="127.0.0.1")
    site = site_probes.create_site(buyer.user, "Office", "Hangzhou")
    (issued,) = site_probes.issue(site, [a.node.pk])
    url = f"/api/v1/probes/{issued.probe.pk}"
    body = {"rtts_ms": [3.0, 4.0, 5.0], "upload_gbps": 0.9, "download_gbps": 0.8,
            "cookies": ["c1", "c2"]}
    early = buyer.client().post(url, body, format="json")
    assert early.status_code == 409 and "benchctl probe" in early.json()["detail"]
    site_probes.claim(a.node, issued.token)
    assert other_buyer.client().post(url, body, format="json").status_code == 404
    bad = buyer.client().post(url, {"rtts_ms": [-1]}, format="json")
    assert bad.status_code == 400
    stored = buyer.client().post(url, body, format="json").json()
    assert stored["rtt_ms"] == 4.0 and stored["confirmed"] is False  # no node record yet
    assert buyer.client().post(url, body, format="json").status_code == 409
    # The node's record names both tests: confirmed.
    record = a.client().post(f"/api/v1/node/probes/{issued.probe.pk}/record", {
        "client": "127.0.0.1", "rtts_ms": [3.1],
        "served": [{"cookie": "c1", "reverse": False, "gbps": 0.9},
                   {"cookie": "c2", "reverse": True, "gbps": 0.8}]}, format="json")
    assert record.status_code == 200
    assert buyer.client().get(url).json()["confirmed"] is True


def test_a_node_record_that_misses_a_test_does_not_confirm(buyer: Any, enrol_node: Any) -> None:
    a = enrol_node("hz-a", address="127.0.0.1")
    site = site_probes.create_site(buyer.user, "Office", "Hangzhou")
    (issued,) = site_probes.issue(site, [a.node.pk])
    site_probes.claim(a.node, issued.token)
    site_probes.record(a.node, issued.probe.pk, {"client": "x", "rtts_ms": [1.0],
                                                 "served": [{"cookie": "c1"}]})
    probe = site_probes.results(buyer.user, issued.probe.pk,
                                {"rtts_ms": [1.0], "upload_gbps": 1.0, "cookies": ["c1", "c2"]})
    assert probe.confirmed is False


def test_the_board_from_my_site_is_mine_alone_and_keeps_the_board_s_ranks(
        buyer: Any, other_buyer: Any, enrol_node: Any) -> None:
    near = enrol_node("hz-near", address="127.0.0.1")
    far = enrol_node("sz-far", address="127.0.0.2")
    unprobed = enrol_node("hz-unprobed", address="127.0.0.3")
    for node, gbps in ((near, 1.0), (far, 5.0), (unprobed, 3.0)):
        measured(buyer, node, gbps)
    site = site_probes.create_site(buyer.user, "Office", "Hangzhou")
    for node, rtt in ((near, 2.0), (far, 30.0)):
        (issued,) = site_probes.issue(site, [node.node.pk])
        site_probes.claim(node.node, issued.token)
        site_probes.results(buyer.user, issued.probe.pk, {"rtts_ms": [rtt], "upload_gbps": 0.5})
    url = f"/api/v1/leaderboard?evidence=any&site={site.pk}"
    plain = buyer.client().get("/api/v1/leaderboard?evidence=any").json()["results"]
    assert [r["node"]["name"] for r in plain] == ["sz-far", "hz-unprobed", "hz-near"]
    page = buyer.client().get(url + "&sort=site_rtt").json()["results"]
    assert [r["node"]["name"] for r in page] == ["hz-near", "sz-far", "hz-unprobed"]
    assert [r["rank"] for r in page] == [3, 1, 2]  # the board's ranks, for everyone
    assert page[0]["site"]["rtt_ms"] == 2.0 and page[2]["site"] is None
    assert other_buyer.client().get(url).status_code == 404
    assert buyer.client().get(url + "&sort=vibes").status_code == 400
    assert buyer.client().get("/api/v1/leaderboard?site=x").status_code == 400


def test_region_paths_gain_rows_from_my_sites_for_me_only(buyer: Any, other_buyer: Any,
                                                          enrol_node: Any, shenzhen: Any) -> None:
    far = enrol_node("sz-far", region=shenzhen, address="127.0.0.2")
    site = site_probes.create_site(buyer.user, "Office", "Hangzhou")
    (issued,) = site_probes.issue(site, [far.node.pk])
    site_probes.claim(far.node, issued.token)
    site_probes.results(buyer.user, issued.probe.pk, {"rtts_ms": [28.0], "upload_gbps": 0.4})
    mine = buyer.client().get("/api/v1/regions/paths").json()["results"]
    assert [(r["from_region"], r["to_region"], r["site_name"], r["rtt_ms"], r["throughput_gbps"])
            for r in mine if r["site"]] == [("Hangzhou", "shenzhen", "Office", 28.0, 0.4)]
    theirs = other_buyer.client().get("/api/v1/regions/paths").json()["results"]
    assert [r for r in theirs if r["site"]] == []


def test_a_nodes_claims_are_throttled_per_node(enrol_node: Any) -> None:
    # Anyone who reaches a node's test server makes it claim whatever token they send: a
    # flood of made-up tokens reaches the platform at the node's claim rate, no faster, and
    # another node behind the same address keeps its own count.
    from api.views.node_agent import PerNode

    allowed = int(PerNode.THROTTLE_RATES["probe-claim"].split("/")[0])
    a = enrol_node("hz-a", address="127.0.0.1")
    b = enrol_node("hz-b", address="127.0.0.1")
    claim = "/api/v1/node/probes/claim"
    client = a.client()
    answers = [client.post(claim, {"token": f"made-up-{i}"}, format="json").status_code
               for i in range(allowed + 1)]
    assert answers == [404] * allowed + [429]
    refused = client.post(claim, {"token": "one-more"}, format="json")
    assert refused.status_code == 429 and refused.json()["detail"]
    assert b.client().post(claim, {"token": "made-up"}, format="json").status_code == 404
