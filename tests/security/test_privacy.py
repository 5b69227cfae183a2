"""#30: what is public is what ranked. Another buyer's custom job (its parameters are its own:
unranked) showed on the public node page's link neighbourhood, in the node's history with its
run ids, and in a third buyer's cluster diagnosis. Each view against jobs.services.visibility."""

from __future__ import annotations

from typing import Any

from django.test import Client

from board import multi_node
from jobs.services import submission
from tests.board.test_links_clusters import multi_node_job, uniform
from web import page

CUSTOM = {"iperf3_duration": 3}  # its own parameters: kept for its owner, ranked nowhere


def test_another_buyers_custom_job_is_not_on_the_public_node_page(
        buyer: Any, enrol_node: Any, django_capture_on_commit_callbacks: Any) -> None:
    one, peer = enrol_node("hz-one", address="10.0.0.2"), enrol_node("hz-peer", address="10.0.0.3")
    with django_capture_on_commit_callbacks(execute=True):
        job = multi_node_job(buyer, [one, peer], uniform(2, 0.4), suite="network", params=CUSTOM)
    assert not job.runs.first().ranked and job.links.count() == 2

    public = Client().get(f"/nodes/{one.node.pk}/")
    assert public.status_code == 200
    assert public.context["link_chart"] == page.link_chart([])  # nothing of that job
    assert "hz-peer" not in public.content.decode()
    own = Client()
    own.force_login(buyer.user)
    assert "hz-peer" in own.get(f"/nodes/{one.node.pk}/").context["link_chart"]


def test_another_buyers_unranked_runs_are_not_in_the_nodes_history(
        buyer: Any, other_buyer: Any, enrol_node: Any) -> None:
    one, peer = enrol_node("hz-one", address="10.0.0.2"), enrol_node("hz-peer", address="10.0.0.3")
    job = multi_node_job(buyer, [one, peer], uniform(2, 0.4), suite="network", params=CUSTOM)
    url = f"/api/v1/nodes/{one.node.pk}/history?metric=network.internode_throughput"

    assert other_buyer.client().get(url).json()["results"] == []
    mine = buyer.client().get(url).json()["results"]
    assert [p["run"] for p in mine] == [job.runs.get(node=one.node).pk]
    assert mine[0]["ranked"] is False and mine[0]["note"]


def test_a_cluster_diagnosis_reads_no_other_buyers_unranked_links(
        buyer: Any, other_buyer: Any, enrol_node: Any,
        django_capture_on_commit_callbacks: Any) -> None:
    one, peer = enrol_node("hz-one", address="10.0.0.2"), enrol_node("hz-peer", address="10.0.0.3")
    with django_capture_on_commit_callbacks(execute=True):
        multi_node_job(buyer, [one, peer], uniform(2, 0.4), suite="network", params=CUSTOM)
    ids = [one.node.pk, peer.node.pk]
    # A training-only job measures no links: its diagnosis falls back to links between its
    # nodes measured elsewhere; another buyer's custom job is not "elsewhere" for it.
    theirs, _ = submission.submit(other_buyer.user, ids, "training")
    assert multi_node.links_of(theirs.pk, ids) == []
    mine, _ = submission.submit(buyer.user, ids, "training")
    assert sorted(li.throughput_gbps for li in multi_node.links_of(mine.pk, ids)) == [0.4, 0.4]
