"""A multi-node figure belongs to the link or the node set that was measured (#15).

The results are posted through the service as hosts post them (the lab test measures the
same on shaped links); what is checked here is where each figure goes and what it ranks.
"""

from __future__ import annotations

import importlib
import re
from collections.abc import Callable
from datetime import timedelta
from pathlib import Path
from typing import Any

import pytest
from django.apps import apps
from django.conf import settings
from django.test import Client
from django.utils import timezone

from board import clusters
from board.models import ClusterResult, LatestResult, LinkResult
from fleet.models import Node, Provider
from fleet.services import enrolment
from jobs.models import BenchmarkJob
from jobs.services import lifecycle, submission, sweeper
from tests.fixtures import HONEST_INVENTORY, Enrolled, measured, trial_agent

Links = dict[tuple[int, int], float]


def sample(metric: str, value: float, unit: str, **metadata: Any) -> dict[str, Any]:
    return {"metric": metric, "value": value, "unit": unit, "n": 3, "p5": value, "p95": value,
            "min": None, "max": None, "cv": 0.01, "metadata": metadata}


def multi_node_job(buyer: Any, enrolled: list[Any], links: Links,
                   received: Links | None = None, step_ms: float = 100.0,
                   suite: str = "full", params: dict[str, Any] | None = None,
                   curve: list[dict[str, float]] | None = None) -> BenchmarkJob:
    """A multi-node job as its hosts post it: each sender's view of its links (with the
    tests' cookies), each receiver's own server log of them, and rank 0's DDP figures
    (``curve``: the all-reduce curve in the busbw sample's metadata, as the probe posts it)."""
    received = links | (received or {})
    job, _ = submission.submit(buyer.user, [e.node.pk for e in enrolled], suite, params)
    runs = list(job.runs.order_by("id"))
    n = len(enrolled)
    for i, (e, run) in enumerate(zip(enrolled, runs, strict=True)):
        claim = lifecycle.claim(e.node, run.pk)
        samples = []
        for j, peer in enumerate(enrolled):
            if j == i:
                continue
            name = f"node:{peer.node.name}"
            samples += [sample("network.internode_throughput", links[(i, j)], "Gbit/s", peer=name,
                               cookies=[f"c-{i}-{j}-a", f"c-{i}-{j}-b"]),
                        sample("network.internode_rtt", 0.2, "ms", peer=name)]
        served = [{"cookie": f"c-{j}-{i}-{k}", "gbps": received[(j, i)]}
                  for j in range(n) if j != i for k in ("a", "b")]
        samples.append(sample("network.internode_received",
                              sorted(t["gbps"] for t in served)[len(served) // 2], "Gbit/s",
                              served=served))
        if suite == "full":
            slowest = min(links[(i, j)] for j in range(n) if j != i)
            world = 2 * n
            samples += [
                sample("training.step_time", step_ms, "ms", world_size=world, nnodes=n),
                sample("training.compute_time", step_ms * 0.6, "ms"),
                sample("training.comm_share", 0.4, "ratio"),
                sample("training.samples_per_s", 32 * world / (step_ms / 1000), "samples/s"),
                sample("training.allreduce_busbw", slowest / 8 * 0.5, "GB/s",
                       **({"curve": curve} if curve is not None else {})),
                sample("training.allreduce_busbw_largest", slowest / 8 * 0.5, "GB/s")]
        lifecycle.finish(e.node, run.pk, claim.attempt.id, True, samples, "", {})
    return job


def uniform(n: int, gbps: float) -> Links:
    return {(i, j): gbps for i in range(n) for j in range(n) if i != j}


@pytest.fixture
def nodes(enrol_node: Any) -> Callable[..., list[Any]]:
    def make(*names: str) -> list[Any]:
        return [enrol_node(name, address=f"10.0.{k // 250}.{k % 250 + 2}")
                for k, name in enumerate(names, start=len(Node.objects.all()))]
    return make


def test_a_fast_node_keeps_its_own_figures_beside_a_slow_one(
        buyer: Any, nodes: Any, django_capture_on_commit_callbacks: Any) -> None:
    fast, twin, slow = nodes("hz-fast", "hz-twin", "sz-slow")
    measured(buyer, fast, 9.4)  # alone, to its reference
    with django_capture_on_commit_callbacks(execute=True):
        multi_node_job(buyer, [fast, twin], uniform(2, 3.83))
        multi_node_job(buyer, [fast, slow], {(0, 1): 0.14, (1, 0): 0.15})
    board = buyer.client().get("/api/v1/leaderboard?evidence=any").json()["results"]
    assert [(r["node"]["name"], r["value"]) for r in board] == [("hz-fast", 9.4)]
    # Neither a link's figure nor a cluster's training is ever a node's row.
    assert not LatestResult.objects.filter(metric__startswith="network.internode").exists()
    assert not LatestResult.objects.filter(metric__startswith="training.").exists()
    matrix = buyer.client().get(f"/api/v1/links?node={fast.node.pk}").json()
    pairs = {(li["from_name"], li["to_name"]): li["throughput_gbps"] for li in matrix["results"]}
    assert pairs == {("hz-fast", "hz-twin"): 3.83, ("hz-twin", "hz-fast"): 3.83,
                     ("hz-fast", "sz-slow"): 0.14, ("sz-slow", "hz-fast"): 0.15}
    # Both ends agree, but they are one provider's hosts: not an independent confirmation.
    assert all(li["agreed"] and not li["confirmed"] for li in matrix["results"])
    # Links keep history, per direction.
    again = buyer.client().get(f"/api/v1/links/history?from_node={fast.node.pk}"
                               f"&to_node={slow.node.pk}").json()["results"]
    assert [li["throughput_gbps"] for li in again] == [0.14]
    assert buyer.client().get("/api/v1/links/history?from_node=x").status_code == 400


def test_a_link_is_confirmed_only_when_the_receiver_counted_the_same(
        buyer: Any, nodes: Any, django_capture_on_commit_callbacks: Any) -> None:
    # The sender of 0 -> 1 claims 9 Gbit/s; the receiver's own server logged 1.2.
    a, b = nodes("hz-1", "hz-2")
    with django_capture_on_commit_callbacks(execute=True):
        job = multi_node_job(buyer, [a, b], {(0, 1): 9.0, (1, 0): 1.21}, {(0, 1): 1.2},
                             suite="network")
    inflated = LinkResult.objects.get(job=job, source=a.node)
    assert (inflated.sender_gbps, inflated.receiver_gbps, inflated.agreed) == (9.0, 1.2, False)
    assert inflated.throughput_gbps == 1.2  # the lower view: inflating gains nothing
    honest = LinkResult.objects.get(job=job, source=b.node)
    assert honest.agreed and honest.throughput_gbps == 1.21
    # Agreeing, two hosts of one provider still do not confirm each other.
    assert not honest.confirmed
    assert not ClusterResult.objects.exists()  # a network job trained nothing


def test_only_another_providers_host_confirms_a_link(
        buyer: Any, enrol_node: Any, django_capture_on_commit_callbacks: Any) -> None:
    mine = enrol_node("hz-1", address="10.0.9.2")
    other = Provider.objects.create(name="Qiantang Cloud")
    _, plain = enrolment.create_token(other, mine.node.region, "hz-x", buyer.user)
    creds = enrolment.redeem(plain, address="10.0.9.3", inventory=HONEST_INVENTORY,
                             observed_address="10.0.9.3")
    theirs = Enrolled(creds.node, creds.api_key, {}, Path("unused"))
    with django_capture_on_commit_callbacks(execute=True):
        job = multi_node_job(buyer, [mine, theirs], uniform(2, 0.95), suite="network")
    assert all(li.agreed and li.confirmed for li in LinkResult.objects.filter(job=job))


def test_a_multi_node_job_reads_finished_only_once_its_links_are_recorded(
        buyer: Any, nodes: Any, django_capture_on_commit_callbacks: Any) -> None:
    # The board records the links when job_finished runs, on commit after the last run's
    # transaction: a poll in between read "succeeded" with no links (a CI demo printed none).
    a, b = nodes("hz-1", "hz-2")
    with django_capture_on_commit_callbacks(execute=False) as hooks:
        job = multi_node_job(buyer, [a, b], uniform(2, 0.95), suite="network")
    url = f"/api/v1/benchmarks/{job.pk}"
    between = buyer.client().get(url).json()
    assert (between["status"], between["links"]) == ("running", [])
    for hook in hooks:
        hook()
    done = buyer.client().get(url).json()
    assert done["status"] == "succeeded" and len(done["links"]) == 2


def test_a_lost_job_finished_is_sent_again_by_the_sweeper(
        buyer: Any, nodes: Any, django_capture_on_commit_callbacks: Any) -> None:
    # The process that stored the last run died before its on-commit hook ran: the hooks are
    # dropped. The sweeper finds the job (all runs in, never finished) once the hook is late.
    a, b = nodes("hz-1", "hz-2")
    with django_capture_on_commit_callbacks(execute=False):
        job = multi_node_job(buyer, [a, b], uniform(2, 0.95), suite="network")
    now = timezone.now()
    assert sweeper.settle_lost(now) == 0  # a hook due any moment is not taken for lost
    late = now + timedelta(seconds=settings.JOB_FINISHED_LOST_AFTER_SECONDS + 1)
    assert sweeper.settle_lost(late) == 1
    assert LinkResult.objects.filter(job=job).count() == 2
    assert buyer.client().get(f"/api/v1/benchmarks/{job.pk}").json()["status"] == "succeeded"
    assert sweeper.settle_lost(late) == 0  # finished now: not sent a third time


def test_clusters_rank_like_with_like_and_the_slow_node_is_named(
        buyer: Any, nodes: Any, django_capture_on_commit_callbacks: Any) -> None:
    good = nodes("hz-a1", "hz-a2", "hz-a3")
    bad = nodes("hz-b1", "hz-b2", "hz-b3")
    slow_b2 = uniform(3, 0.95) | {(0, 1): 0.19, (1, 0): 0.19, (1, 2): 0.2, (2, 1): 0.19}
    with django_capture_on_commit_callbacks(execute=True):
        multi_node_job(buyer, good, uniform(3, 0.95), step_ms=100.0)
        multi_node_job(buyer, bad, slow_b2, step_ms=400.0)
        multi_node_job(buyer, good[:2], uniform(2, 0.95))  # another size: another section
    # The hosts' own runs: their claims, ranked when the buyer asks for every figure.
    body = buyer.client().get("/api/v1/clusters?evidence=any").json()
    three = [r for r in body["results"] if r["size"] == 3]
    assert [(r["rank"], [n["name"] for n in r["nodes"]]) for r in three] == [
        (1, ["hz-a1", "hz-a2", "hz-a3"]), (2, ["hz-b1", "hz-b2", "hz-b3"])]
    assert three[0]["name"] == "West Lake DC, Hangzhou, 3 x CPU"
    assert three[1]["slowest_link_gbps"] == 0.19 and three[0]["slowest_link_gbps"] == 0.95
    assert [r["size"] for r in body["results"]] == [2, 3, 3]
    assert [f["verdict"] for f in three[1]["diagnosis"] if f["code"] == "slow-node"] == [
        "hz-b2: its links run at 0.19 of the others' 0.95 Gbit/s"]
    assert not [f for f in three[0]["diagnosis"] if f["code"] in ("slow-node", "slow-link")]
    by_link = buyer.client().get(
        "/api/v1/clusters?metric=network.slowest_link&size=3&evidence=any").json()
    assert [r["rank"] for r in by_link["results"]] == [1, 2]
    csv = buyer.client().get("/api/v1/clusters?format=csv&evidence=any").content.decode(
        "utf-8-sig")
    assert csv.splitlines()[0].startswith("rank,size,gpu_model,cluster,name")
    # The pages: the board's cluster tables, and the link matrix naming the slow node.
    page = Client().get("/?evidence=any").content.decode()
    assert page.count('class="clusters"') == 2 and "hz-b2: its links run at" in page
    assert 'class="chart links"' in page  # the link matrix of every measured pair
    node_page = Client().get(f"/nodes/{bad[1].node.pk}/").content.decode()
    assert 'class="chart links"' in node_page and "hz-b2: its links run at" in node_page
    assert ("hz-b1 → hz-b2: 0.19 Gbit/s, RTT 0.2 ms (both ends agree, but both are the "
            "provider&#x27;s hosts)") in node_page
    provider_page = Client().get(f"/providers/{bad[1].node.provider_id}/").content.decode()
    assert provider_page.count("<rect class=\"cell\"") == 12  # each ordered pair of both clusters, once


def cells(page: str, row_marker: str) -> list[tuple[str, str]]:
    row = page[page.index(row_marker):].split("</tr>")[0]
    return re.findall(r'<td class="num( best)?">([^<]*)</td>', row)


def test_two_clusters_compare_side_by_side_and_a_budget_drops_the_dear_one(
        buyer: Any, nodes: Any, django_capture_on_commit_callbacks: Any) -> None:
    good, bad = nodes("hz-a1", "hz-a2"), nodes("hz-b1", "hz-b2")
    with django_capture_on_commit_callbacks(execute=True):
        multi_node_job(buyer, good, uniform(2, 0.95), step_ms=100.0)
        multi_node_job(buyer, bad, {(0, 1): 0.19, (1, 0): 0.19}, step_ms=400.0)
    for node, price in zip(good + bad, (20_000, 20_000, 9_000, 9_000), strict=True):
        Node.objects.filter(pk=node.node.pk).update(monthly_price_cny=price)
    fast, slow = (ClusterResult.objects.get(nodes=n[0].node).pk for n in (good, bad))
    page = Client().get(f"/en/compare/?clusters={fast},{slow}").content.decode()
    assert page.count("data-candidate=") == 2 and "West Lake DC · Hangzhou · 2 × CPU" in page
    # The faster link and the shorter step win their rows; the cheaper pair wins on price.
    assert cells(page, 'data-metric="network.slowest_link"') == [(" best", "0.95"), ("", "0.19")]
    assert cells(page, 'data-metric="training.step_time"') == [(" best", "100"), ("", "400")]
    assert cells(page, 'class="price"') == [("", "40,000 (+22,000)"), (" best", "18,000")]
    # Under a 30,000 CNY budget only the cheaper cluster is on the board.
    board = Client().get("/en/?max_price=30000&evidence=any").content.decode()
    assert f'name="clusters" value="{slow}"' in board and f'name="clusters" value="{fast}"' not in board
    assert Client().get(f"/en/compare/?clusters={fast}").status_code == 400  # one is no comparison
    assert Client().get("/en/compare/?clusters=999999,999998").status_code == 404
    assert Client().get("/zh-hans/compare/?clusters=999999,999998").status_code == 404  # any language


def test_a_job_that_mixes_providers_ranks_no_cluster(
        buyer: Any, other_buyer: Any, nodes: Any, django_capture_on_commit_callbacks: Any) -> None:
    ours, theirs = nodes("hz-1", "hz-2")
    Node.objects.filter(pk=theirs.node.pk).update(
        provider=Provider.objects.create(name="Qiantang Cloud", kind="cloud"))
    with django_capture_on_commit_callbacks(execute=True):
        job = multi_node_job(buyer, [ours, theirs], uniform(2, 0.9))
    cluster = ClusterResult.objects.get(job=job)
    assert (cluster.offer, cluster.provider, cluster.size) == (False, None, 2)
    assert cluster.figures["training.step_time"]["value"] == 100.0  # kept for its owner
    assert buyer.client().get("/api/v1/clusters").json()["results"] == []
    assert len(buyer.client().get(f"/api/v1/links?job={job.pk}").json()["results"]) == 2
    detail = buyer.client().get(f"/api/v1/benchmarks/{job.pk}").json()
    assert detail["cluster"]["offer"] is False and "ranked on no cluster board" in detail["cluster"]["note"]
    assert len(detail["links"]) == 2
    # Another buyer sees neither this job's links nor its cluster.
    assert other_buyer.client().get(f"/api/v1/links?job={job.pk}").status_code == 404


def test_paths_between_regions_and_bad_selections(
        buyer: Any, nodes: Any, shenzhen: Any, django_capture_on_commit_callbacks: Any) -> None:
    hz, sz = nodes("hz-1", "sz-1")
    Node.objects.filter(pk=sz.node.pk).update(region=shenzhen)
    with django_capture_on_commit_callbacks(execute=True):
        multi_node_job(buyer, [hz, sz], {(0, 1): 0.5, (1, 0): 0.4}, suite="network")
    paths = buyer.client().get("/api/v1/regions/paths").json()["results"]
    assert [(p["from_region"], p["to_region"], p["throughput_gbps"]) for p in paths] == [
        ("hangzhou", "shenzhen", 0.5), ("shenzhen", "hangzhou", 0.4)]
    client = buyer.client()
    for url, field in (("/api/v1/links", "job"), ("/api/v1/links?job=x", "job"),
                       ("/api/v1/clusters?metric=storage.randread_iops", "metric"),
                       ("/api/v1/clusters?size=two", "size")):
        response = client.get(url)
        assert response.status_code == 400 and field in response.json()["errors"], url


def test_existing_multi_node_samples_move_to_links_and_clusters(
        buyer: Any, nodes: Any) -> None:
    # Data from before: no node count on the job, no link or cluster rows, and the node's
    # board row of internode throughput (its worst link) and of the job's training.
    a, b = nodes("hz-1", "hz-2")
    job = multi_node_job(buyer, [a, b], uniform(2, 2.0))  # on_commit never ran: as before
    BenchmarkJob.objects.filter(pk=job.pk).update(node_count=1)
    run = job.runs.order_by("id").first()
    assert run is not None and run.status == "succeeded", (run and run.status, run and run.error)
    for metric in ("network.internode_throughput", "training.step_time"):
        LatestResult.objects.create(node=a.node, metric=metric, value=2.0, unit="Gbit/s",
                                    run=run, measured_at=run.finished_at,
                                    evidence=LatestResult.ANY)
    migration = importlib.import_module("board.migrations.0008_links_and_clusters_data")
    migration.move(apps, None)
    assert LinkResult.objects.filter(job=job).count() == 2
    assert ClusterResult.objects.get(job=job).size == 2
    assert not LatestResult.objects.filter(node=a.node).exists()
    assert clusters.board(evidence="any")[0][1][0].result.job_id == job.pk
    assert ClusterResult.objects.get(job=job).grade == "host-reported"  # its hosts' word


def test_a_cluster_ranks_by_default_only_as_a_buyers_trial_agents_measured_it(
        buyer: Any, other_buyer: Any, nodes: Any, settings: Any,
        django_capture_on_commit_callbacks: Any) -> None:
    settings.TRIAL_TOKENS_PER_DAY = 100
    claimed, honest = nodes("hz-c1", "hz-c2"), nodes("hz-m1", "hz-m2")
    agents = [trial_agent(buyer, e) for e in honest]
    with django_capture_on_commit_callbacks(execute=True):
        # The provider's own hosts post a fast cluster; the buyer's agents measure another,
        # three times, one run slow: the board takes the median of the last runs.
        multi_node_job(buyer, claimed, uniform(2, 0.95), step_ms=50.0)
        for step in (100.0, 400.0, 120.0):
            job = multi_node_job(buyer, agents, uniform(2, 0.9), step_ms=step)
    measured_cluster = ClusterResult.objects.get(job=job)
    # The agents' cluster is the provider's nodes they measure, and it is the buyer's word.
    assert sorted(n.name for n in measured_cluster.nodes.all()) == ["hz-m1", "hz-m2"]
    assert measured_cluster.grade == "buyer-measured"
    body = buyer.client().get("/api/v1/clusters?metric=training.step_time").json()
    assert body["evidence"] == "measured"
    (row,) = body["results"]
    assert [n["name"] for n in row["nodes"]] == ["hz-m1", "hz-m2"]
    assert (row["rank"], row["evidence"], row["runs"], row["value"]) == (
        1, "buyer-measured", 3, 120.0)
    (apart,) = body["host_reported"]
    assert apart["rank"] is None and apart["evidence"] == "host-reported"
    assert [n["name"] for n in apart["nodes"]] == ["hz-c1", "hz-c2"]
    # Every figure: the claim ranks first on its 50 ms, labelled as the host's.
    every = buyer.client().get("/api/v1/clusters?metric=training.step_time&evidence=any").json()
    assert [(r["value"], r["evidence"]) for r in every["results"]] == [
        (50.0, "host-reported"), (120.0, "buyer-measured")]
    # The agents' links are the provider's nodes' links, confirmed: the buyer holds both ends.
    links = LinkResult.objects.filter(job=job)
    assert {(li.source.name, li.target.name) for li in links} == {("hz-m1", "hz-m2"),
                                                                  ("hz-m2", "hz-m1")}
    assert all(li.confirmed for li in links)
    page = Client().get("/en/").content.decode()
    apart_line = re.search(r'<p class="muted apart-clusters">(.*?)</p>', page, re.S)
    assert page.count('class="clusters"') == 1 and apart_line is not None
    assert "hz-c1, hz-c2" in apart_line.group(1) and "hz-m1" not in apart_line.group(1)
    bad = buyer.client().get("/api/v1/clusters?evidence=trusted")
    assert bad.status_code == 400 and "evidence" in bad.json()["errors"]
    assert other_buyer.client().get("/api/v1/clusters").json()["results"][0]["runs"] == 3
