"""POST /api/v1/estimates: a buyer's job estimated on each candidate from its board figures.

The clusters' figures are posted as their hosts post them (tests/leaderboard's
multi_node_job); what is checked is which figures the estimate stands on, how candidates
rank, and what a provider cannot buy with a claim.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext

from board import estimate
from board.models import ClusterResult
from contract import gpu_models
from fleet.models import Node, Region
from tests.board.test_links_clusters import multi_node_job, uniform
from tests.fixtures import HONEST_INVENTORY, Actor, measured, trial_agent

A100_NAME = "NVIDIA A100-SXM4-80GB"
A100 = HONEST_INVENTORY | {"gpu": {"available": True, "devices": [{"name": A100_NAME}]}}
TFLOPS = 250.0  # bf16, under the A100's published 312
URL = "/api/v1/estimates"
GPT2_MEDIUM = {"preset": "gpt2-medium", "steps": 20_000, "nodes": 2}


def curve_for(link_gbps: float) -> list[dict[str, float]]:
    """What the probe posts: busbw rising with the message size to half the link's GB/s."""
    top = link_gbps / 8 * 0.5
    return [{"size_mib": 1, "busbw_gbs": top * 0.5}, {"size_mib": 32, "busbw_gbs": top}]


@pytest.fixture
def cluster(enrol_node: Any, buyer: Actor, settings: Any,
            django_capture_on_commit_callbacks: Any) -> Callable[..., ClusterResult]:
    """Two A100 nodes measured together on a link of ``gbps``, each with its own matmul: by
    the buyer's trial agents of them (buyer-measured), or with ``hosts`` by the provider's
    hosts themselves (host-reported)."""
    settings.TRIAL_TOKENS_PER_DAY = 100

    def make(prefix: str, region: Region | None, gbps: float, price: int | None = 25_000,
             params: dict[str, Any] | None = None, curve: list[dict[str, float]] | None = None,
             tflops: float | None = TFLOPS, hosts: bool = False,
             inventory: dict[str, Any] = A100) -> ClusterResult:
        count = Node.objects.count()
        enrolled = [enrol_node(f"{prefix}{i}", region=region, inventory=inventory,
                               address=f"10.0.9.{count + i + 2}") for i in range(2)]
        runs_on = enrolled if hosts else [trial_agent(buyer, e, inventory=inventory)
                                          for e in enrolled]
        for e, on in zip(enrolled, runs_on, strict=True):
            Node.objects.filter(pk=e.node.pk).update(monthly_price_cny=price)
            if tflops is not None:
                measured(buyer, on, 5.0, extra={"gpu.matmul_tflops_bf16": tflops})
        with django_capture_on_commit_callbacks(execute=True):  # links and cluster: on commit
            job = multi_node_job(buyer, runs_on, uniform(2, gbps), params=params,
                                 curve=curve if curve is not None else curve_for(gbps))
        return ClusterResult.objects.get(job=job)
    return make


def post(actor: Actor, body: dict[str, Any]) -> Any:
    return actor.client().post(URL, body, format="json")


def test_the_cheapest_two_node_candidate_ranks_first_with_its_parts(
        cluster: Any, buyer: Actor, hangzhou: Region, shenzhen: Region) -> None:
    fast = cluster("hz", hangzhou, 10.0, price=25_000)
    slow = cluster("sz", shenzhen, 1.0, price=20_000)  # cheaper a month, dearer for this job
    response = post(buyer, {"workload": GPT2_MEDIUM})
    assert response.status_code == 200, response.json()
    body = response.json()
    assert [r["id"] for r in body["results"]] == [fast.pk, slow.pk]
    assert [r["rank"] for r in body["results"]] == [1, 2]
    first = body["results"][0]["estimate"]
    compute = 512 * 2.18e12 / (2 * TFLOPS * 1e12)
    assert first["parts_s"]["compute"] == pytest.approx(compute)
    assert first["step_s"] == pytest.approx(sum(first["parts_s"].values()))
    assert first["hours"] == pytest.approx(20_000 * first["step_s"] / 3600)
    assert first["cost_cny"] == pytest.approx(50_000 * first["hours"] / 730)
    assert first["unmeasured"] == ["input"]  # no DataLoader or storage figure on the board
    dear = body["results"][1]["estimate"]
    assert dear["bottleneck"] == "sync" and dear["shares"]["sync"] > 0.8
    assert dear["summary"].startswith("gradient sync: ")
    assert "would cut the job from" in dear["summary"]
    assert body["results"][1]["sources"]["busbw_curve"] == (
        f"training.allreduce_busbw curve of job {slow.job_id}")


def test_board_filters_pick_the_candidates(cluster: Any, buyer: Actor, hangzhou: Region,
                                           shenzhen: Region) -> None:
    cluster("hz", hangzhou, 10.0, price=25_000)
    slow = cluster("sz", shenzhen, 1.0, price=20_000)
    body = post(buyer, {"workload": GPT2_MEDIUM, "region": "guangdong"}).json()
    assert [r["id"] for r in body["results"]] == [slow.pk]
    body = post(buyer, {"workload": GPT2_MEDIUM, "max_price": 45_000}).json()
    assert [r["id"] for r in body["results"]] == [slow.pk]  # 2 x 25,000 is over the budget
    # Ranked by time, the cluster's cost plays no part.
    body = post(buyer, {"workload": GPT2_MEDIUM, "rank_by": "time"}).json()
    hours = [r["estimate"]["hours"] for r in body["results"]]
    assert hours == sorted(hours)


def test_a_candidate_without_a_price_ranks_after_priced_ones_never_as_free(
        cluster: Any, buyer: Actor, hangzhou: Region) -> None:
    unpriced = cluster("np", hangzhou, 10.0, price=None)
    priced = cluster("pr", hangzhou, 1.0, price=30_000)  # slower and dearer, but priced
    body = post(buyer, {"workload": GPT2_MEDIUM}).json()
    assert [r["id"] for r in body["results"]] == [priced.pk, unpriced.pk]
    assert body["results"][1]["estimate"]["cost_cny"] is None


def test_a_custom_parameter_cluster_is_skipped_with_its_reason(
        cluster: Any, buyer: Actor, hangzhou: Region) -> None:
    # A provider's hand-tuned run is kept, but no buyer's decision stands on it.
    tuned = cluster("tu", hangzhou, 10.0, params={"train_steps": 7})
    body = post(buyer, {"workload": GPT2_MEDIUM, "clusters": [tuned.pk]}).json()
    (row,) = body["results"]
    assert row["rank"] is None and row["estimate"] is None
    assert (row["skipped_code"], row["skipped_values"]) == ("not-an-offer", {})
    assert row["skipped"].startswith("not a ranked offer")  # worded from the code
    assert post(buyer, {"workload": GPT2_MEDIUM}).json()["results"] == []


def test_an_inflated_curve_point_counts_at_the_peak_intake_checked(
        cluster: Any, buyer: Actor, hangzhou: Region) -> None:
    # The host claims 100 GB/s at 16 MiB on a 1 Gbit/s link; its busbw sample (the peak the
    # consistency rules checked against the links) says 0.0625 GB/s.
    honest = cluster("ho", hangzhou, 1.0)
    lying = cluster("li", hangzhou, 1.0, curve=[{"size_mib": 1, "busbw_gbs": 0.03125},
                                                {"size_mib": 16, "busbw_gbs": 100.0},
                                                {"size_mib": 32, "busbw_gbs": 0.0625}])
    body = post(buyer, {"workload": GPT2_MEDIUM, "rank_by": "time"}).json()
    by_id = {r["id"]: r["estimate"] for r in body["results"]}
    # Every bucket is costed at no more than the checked 0.0625 GB/s: the claim buys at
    # most a curve flat at that peak, where the raw curve would have made sync ~free.
    job = estimate.from_preset("gpt2-medium", steps=20_000, nodes=2)
    flat = estimate.estimate(job, estimate.Measured(tflops=TFLOPS, busbw_curve=[(2**20, 0.0625)]))
    raw = estimate.estimate(job, estimate.Measured(tflops=TFLOPS, busbw_curve=[
        (2**20, 0.03125), (16 * 2**20, 100.0), (32 * 2**20, 0.0625)]))
    assert by_id[lying.pk]["sync_total_s"] == pytest.approx(flat.sync_total_s, rel=0.01)
    assert by_id[lying.pk]["sync_total_s"] > 10 * raw.sync_total_s
    assert by_id[honest.pk]["sync_total_s"] >= flat.sync_total_s


def test_a_gpu_without_a_measured_matmul_is_estimated_on_its_datasheet_labelled(
        cluster: Any, buyer: Actor, hangzhou: Region) -> None:
    # #32: the enrolled model's attainable figure from the per-model table, labelled
    # datasheet (below host-reported), where no GPU figure of the node was measured.
    bare = cluster("ba", hangzhou, 10.0, tflops=None)
    (row,) = post(buyer, {"workload": GPT2_MEDIUM, "clusters": [bare.pk]}).json()["results"]
    a100 = gpu_models.lookup(A100_NAME)
    assert a100 is not None and a100.matmul_attainable
    assert row["evidence"] == "datasheet", row
    assert row["sources"]["tflops"].startswith(f"datasheet of the enrolled {a100.name}")
    attainable = a100.bf16 * a100.matmul_attainable
    assert row["estimate"]["parts_s"]["compute"] == pytest.approx(512 * 2.18e12 / (2 * attainable * 1e12))
    # A CPU-only job has no datasheet to stand on: skipped, not guessed.
    (cpu,) = post(buyer, {"workload": GPT2_MEDIUM | {"cpu_only": True},
                          "clusters": [bare.pk]}).json()["results"]
    assert cpu["estimate"] is None and cpu["skipped_code"] == "no-figure", cpu


def test_a_one_node_job_estimates_nodes_and_syncs_nothing(enrol_node: Any, buyer: Actor) -> None:
    e = enrol_node("solo", inventory=A100)
    # Enrolment records the GPU the host claims: its matmul is judged against the A100's peak.
    assert e.node.gpu_model == A100_NAME
    figures = {"gpu.matmul_tflops_bf16": 200.0, "training.dataloader_samples_per_s": 1000.0,
               "storage.packedfile_read": 50_000.0}
    # The host's own figures estimate nothing by default: they are its provider's claims.
    measured(buyer, e, 5.0, extra=figures)
    job = {"workload": {"preset": "resnet50", "steps": 1000}}
    assert post(buyer, job).json()["results"] == []
    (claimed,) = post(buyer, job | {"evidence": "any"}).json()["results"]
    assert claimed["evidence"] == "host-reported" and claimed["estimate"] is not None
    # A buyer's trial agent on it measures the same: the estimate stands on that.
    measured(buyer, trial_agent(buyer, e, inventory=A100), 5.0, extra=figures)
    body = post(buyer, job).json()
    (row,) = body["results"]
    assert row["kind"] == "node" and row["id"] == e.node.pk
    assert row["evidence"] == "buyer-measured"
    parts = row["estimate"]["parts_s"]
    assert parts["sync"] == 0.0
    assert parts["compute"] == pytest.approx(256 * 22.8e9 / 200e12)
    # 256 samples at the loader's 1,000 a second outlast the compute: the input stalls.
    assert parts["input"] == pytest.approx(256 / 1000 - parts["compute"])
    assert row["estimate"]["bottleneck"] == "input"
    # A node alone is not a two-node candidate: it is named, and why.
    body = post(buyer, {"workload": GPT2_MEDIUM, "nodes": [e.node.pk]}).json()
    (alone,) = body["results"]
    assert (alone["skipped_code"], alone["skipped_values"]) == ("needs-cluster", {"nodes": 2})


@pytest.mark.parametrize("body, field", [
    ({"workload": {"steps": 10}}, "workload"),
    ({"workload": {"preset": "gpt5", "steps": 10}}, "workload"),
    ({"workload": {"preset": "gpt2-small", "steps": 0}}, "workload"),
    ({"workload": {"preset": "gpt2-small", "steps": 10}, "rank_by": "vibes"}, "rank_by"),
    ({"workload": {"preset": "gpt2-small", "steps": 10}, "clusters": [2**40]}, "clusters"),
    ({"workload": {"preset": "gpt2-small", "steps": 10}, "region": "a\x00b"}, "region"),
])
def test_a_bad_request_is_a_400_naming_the_field(buyer: Actor, body: dict[str, Any],
                                                 field: str) -> None:
    response = post(buyer, body)
    assert response.status_code == 400
    assert field in str(response.json()["errors"])


def test_an_unknown_cluster_id_is_a_400(buyer: Actor) -> None:
    response = post(buyer, {"workload": GPT2_MEDIUM, "clusters": [999_999]})
    assert response.status_code == 400 and response.json()["errors"] == {
        "clusters": "no cluster 999999"}


def test_explicit_figures_override_the_preset(cluster: Any, buyer: Actor,
                                              hangzhou: Region) -> None:
    c = cluster("ex", hangzhou, 10.0)
    body = post(buyer, {"workload": GPT2_MEDIUM | {"global_batch": 1024}, "clusters": [c.pk]}).json()
    assert body["workload"]["global_batch"] == 1024
    assert body["results"][0]["estimate"]["parts_s"]["compute"] == pytest.approx(
        1024 * 2.18e12 / (2 * TFLOPS * 1e12))


def test_a_cluster_only_its_hosts_measured_is_skipped_unless_the_claims_are_asked_for(
        cluster: Any, buyer: Actor, hangzhou: Region) -> None:
    # The provider's own hosts post their cluster's figures: a claim, not a candidate by default.
    claimed = cluster("hc", hangzhou, 9.5, hosts=True)
    honest = cluster("bm", hangzhou, 10.0)
    assert (claimed.grade, honest.grade) == ("host-reported", "buyer-measured")
    body = post(buyer, {"workload": GPT2_MEDIUM, "clusters": [claimed.pk, honest.pk]}).json()
    rows = {r["id"]: r for r in body["results"]}
    assert rows[claimed.pk]["estimate"] is None
    assert "host-reported" in rows[claimed.pk]["skipped"]
    assert rows[honest.pk]["rank"] == 1 and rows[honest.pk]["evidence"] == "buyer-measured"
    # The board's candidates: the measured cluster only; with evidence any, both, labelled.
    board = post(buyer, {"workload": GPT2_MEDIUM}).json()["results"]
    assert [r["id"] for r in board] == [honest.pk]
    both = post(buyer, {"workload": GPT2_MEDIUM, "evidence": "any"}).json()["results"]
    assert {r["id"]: r["evidence"] for r in both} == {claimed.pk: "host-reported",
                                                      honest.pk: "buyer-measured"}


def test_an_estimate_costs_the_same_queries_for_2_candidates_or_6(
        enrol_node: Any, buyer: Actor, hangzhou: Region) -> None:
    # The candidates' board figures are read at once: one query a candidate made the
    # estimate over the board's 50 a round trip each (#35).
    for i in range(6):
        e = enrol_node(f"q{i}", region=hangzhou, inventory=A100, address=f"10.0.8.{i + 2}")
        measured(buyer, e, 5.0, extra={"gpu.matmul_tflops_bf16": TFLOPS})
    ids = list(Node.objects.order_by("pk").values_list("pk", flat=True))

    def queries(nodes: list[int]) -> int:
        with CaptureQueriesContext(connection) as done:
            response = post(buyer, {"workload": {"preset": "gpt2-small", "steps": 1000},
                                    "nodes": nodes, "evidence": "any"})
        assert response.status_code == 200, response.json()
        results = response.json()["results"]
        assert len(results) == len(nodes) and all(r["estimate"] for r in results), results
        return len(done)

    assert queries(ids[:2]) == queries(ids)
