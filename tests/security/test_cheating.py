"""A cheating provider against the board and the certificates: each attack that worked on
`main` before the trust issue, and what stops it now. Real parts: the API over HTTP (Django
test client), PostgreSQL, the reference endpoint's real iperf3 server and echo server with
their own logs, real iperf3 clients, and `benchctl verify` as a subprocess."""

from __future__ import annotations

import base64
import json
import subprocess
import sys
import threading
from datetime import timedelta
from http.server import BaseHTTPRequestHandler, HTTPServer
from pathlib import Path
from typing import Any

import pytest
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey
from django.utils import timezone

from api.errors import status_of
from board.models import LatestResult
from certification.models import Certificate, CertificationRequest
from certification.services import criteria, signing
from certification.services import issuing as certification
from config.errors import DomainError
from fleet.services import revocation
from jobs.models import Run, Sample
from jobs.services import intake, lifecycle, observability, submission
from lab.procs import REPO
from tests.fixtures import HONEST_INVENTORY, reference_samples
from workers.buyer import certificate, trust_store


@pytest.fixture(autouse=True)
def signing_key(tmp_path: Path, settings: Any) -> None:
    settings.CERT_SIGNING_KEY_FILE = str(tmp_path / "key.pem")
    settings.CERTIFICATION_JOB_PROFILE = "quick"
    signing.private_key.cache_clear()


def sample(metric: str, value: float, unit: str, **extra: Any) -> dict[str, Any]:
    return {"metric": metric, "value": value, "unit": unit, "n": 3, "p5": value, "p95": value,
            "min": value, "max": value, "cv": 0.0, "metadata": {}} | extra


FAKE_NETWORK = [sample("network.tcp_throughput", 95.0, "Gbit/s"),
                sample("network.tcp_rtt", 0.05, "ms")]
FAKE_STORAGE = [sample("storage.randread_iops", 2_500_000.0, "IOPS")]


def claim_and_post(node: Any, job: Any, samples: list[dict[str, Any]],
                   inventory: dict[str, Any] | None = None) -> Any:
    """What a provider can do by hand with its node key: no worker, no probe."""
    run = job.runs.get(node=node.node)
    spec = node.client().post(f"/api/v1/node/runs/{run.pk}/claim").json()
    return node.client().post(f"/api/v1/node/runs/{run.pk}/result", {
        "attempt_id": spec["attempt_id"], "status": "succeeded", "samples": samples,
        "inventory": inventory or {}}, format="json")


def board(client: Any, query: str = "") -> dict[str, Any]:
    page: dict[str, Any] = client.get(f"/api/v1/leaderboard?{query}").json()
    return page


def names(rows: list[dict[str, Any]]) -> list[str]:
    return [r["node"]["name"] for r in rows]


def test_a_noop_run_cannot_carry_figures(provider_owner: Any, enrol_node: Any) -> None:
    node = enrol_node("hz-cheat")
    job, _ = submission.submit(provider_owner.user, [node.node.pk], "noop")
    response = claim_and_post(node, job, FAKE_NETWORK + FAKE_STORAGE)
    assert response.status_code == 400
    assert "network.tcp_throughput is not measured by this job's probes (noop)" in \
        response.json()["detail"]
    assert not Sample.objects.exists() and not LatestResult.objects.exists()
    # The run stays open for what its probe measures (a node runs one run at a time, so the
    # same attempt posts again): its own noop.duration is stored, but a noop never ranks.
    run = job.runs.get()
    assert node.client().post(f"/api/v1/node/runs/{run.pk}/result", {
        "attempt_id": str(run.current_attempt), "status": "succeeded",
        "samples": [sample("noop.duration", 0.1, "s")], "inventory": {}},
        format="json").status_code == 200
    assert not job.runs.get().ranked and not LatestResult.objects.exists()


def test_a_metric_twice_for_one_peer_is_refused(buyer: Any, enrol_node: Any) -> None:
    node = enrol_node("hz-1")
    job, _ = submission.submit(buyer.user, [node.node.pk], "storage")
    twice = [sample("storage.checkpoint_write", 0.1, "GB/s"),
             sample("storage.checkpoint_write", 9.0, "GB/s")]
    response = claim_and_post(node, job, twice)
    assert response.status_code == 400
    assert "storage.checkpoint_write is given twice" in response.json()["detail"]


def verified_run(buyer: Any, enrolled: Any) -> None:
    """A buyer's quick network run whose figures the reference's own record matches."""
    job, _ = submission.submit(buyer.user, [enrolled.node.pk], "network", profile="quick")
    run = job.runs.get()
    claim = lifecycle.claim(enrolled.node, run.pk)
    lifecycle.finish(enrolled.node, run.pk, claim.attempt.id, True,
                     reference_samples(claim.spec()), "", {})


def test_typed_network_figures_do_not_rank(buyer: Any, provider_owner: Any, enrol_node: Any,
                                           reference_endpoint: Any) -> None:
    cheat, honest = enrol_node("hz-cheat"), enrol_node("hz-honest")
    job, _ = submission.submit(provider_owner.user, [cheat.node.pk], "network", profile="quick")
    typed = [s | {"metadata": {"peer": "reference:hangzhou:ref1"}} for s in
             (sample("network.tcp_throughput", 9.5, "Gbit/s"), sample("network.tcp_rtt", 0.05, "ms"))]
    assert claim_and_post(cheat, job, typed).status_code == 200  # stored, as host-reported
    verified_run(buyer, honest)
    page = board(buyer.client(), "metric=network.tcp_throughput")
    assert page["evidence"] == "measured"
    assert names(page["results"]) == ["hz-honest"]
    assert page["results"][0]["evidence"] == "platform-verified"
    assert "iperf3 server's log" in page["results"][0]["evidence_source"]
    # The typed figure is listed apart, unranked and marked.
    assert names(page["host_reported"]) == ["hz-cheat"]
    apart = page["host_reported"][0]
    assert (apart["rank"], apart["evidence"], apart["requested_by"]) == (None, "host-reported",
                                                                         "provider")
    rtt = board(buyer.client(), "metric=network.tcp_rtt")
    assert names(rtt["results"]) == ["hz-honest"] and names(rtt["host_reported"]) == ["hz-cheat"]
    csv = buyer.client().get("/api/v1/leaderboard?format=csv").content.decode("utf-8-sig")
    assert "evidence" in csv.splitlines()[0] and "platform-verified" in csv


def test_typed_figures_listed_apart_keep_the_board_s_filters(
        buyer: Any, provider_owner: Any, enrol_node: Any, reference_endpoint: Any,
        shenzhen: Any) -> None:
    # The list apart is found from the index alone (which nodes hold a figure but none of the
    # ranked class) and only then filtered: a typed figure must not slip into a filtered
    # board, nor a ranked node be listed apart as well.
    cheats = {name: enrol_node(name, region=region) for name, region in
              (("hz-cheat", None), ("sz-cheat", shenzhen))}
    for enrolled in cheats.values():
        job, _ = submission.submit(provider_owner.user, [enrolled.node.pk], "network",
                                   profile="quick")
        assert claim_and_post(enrolled, job, [sample("network.tcp_throughput", 9.5, "Gbit/s")
                                              | {"metadata": {"peer": "reference:hangzhou:ref1"}}]
                              ).status_code == 200
    honest = enrol_node("hz-honest")
    verified_run(buyer, honest)
    page = board(buyer.client(), "metric=network.tcp_throughput")
    assert names(page["results"]) == ["hz-honest"]
    assert sorted(names(page["host_reported"])) == ["hz-cheat", "sz-cheat"]
    assert names(board(buyer.client(), "metric=network.tcp_throughput&region=shenzhen")[
        "host_reported"]) == ["sz-cheat"]
    hangzhou = board(buyer.client(), "metric=network.tcp_throughput&region=zhejiang")
    assert (names(hangzhou["results"]), names(hangzhou["host_reported"])) == (["hz-honest"],
                                                                              ["hz-cheat"])
    assert board(buyer.client(), "metric=network.tcp_throughput&profile=full")[
        "host_reported"] == []


def test_a_host_figure_far_from_the_references_record_is_refused(
        buyer: Any, enrol_node: Any, reference_endpoint: Any) -> None:
    node = enrol_node("hz-1")
    job, _ = submission.submit(buyer.user, [node.node.pk], "network", profile="quick")
    run = job.runs.get()
    claim = lifecycle.claim(node.node, run.pk)
    samples = reference_samples(claim.spec())
    forward = next(s for s in samples if s["metric"] == "network.tcp_throughput")
    forward |= {k: forward[k] * 2 for k in ("value", "p5", "p95", "min", "max")}
    response = node.client().post(f"/api/v1/node/runs/{run.pk}/result", {
        "attempt_id": str(claim.attempt.id), "status": "succeeded", "samples": samples},
        format="json")
    assert response.status_code == 422
    assert "the reference measured" in response.json()["errors"]["reference_mismatch"]
    run.refresh_from_db()
    assert run.status == "failed" and run.error.startswith("inconsistent result: reference_mismatch")
    assert not Sample.objects.exists()
    assert 'reason="inconsistent:reference_mismatch"' in observability.render()


def test_another_hosts_test_cannot_be_presented(buyer: Any, enrol_node: Any,
                                                 reference_endpoint: Any) -> None:
    fast, slow = enrol_node("hz-fast"), enrol_node("hz-slow")
    job, _ = submission.submit(buyer.user, [fast.node.pk, slow.node.pk], "network", profile="quick")
    runs = {r.node_id: r for r in job.runs.all()}
    fast_claim = lifecycle.claim(fast.node, runs[fast.node.pk].pk)
    slow_claim = lifecycle.claim(slow.node, runs[slow.node.pk].pk)
    measured = reference_samples(fast_claim.spec())
    throughput = [s for s in measured if s["metric"].startswith("network.tcp_throughput")]
    lifecycle.finish(fast.node, fast_claim.run.pk, fast_claim.attempt.id, True,
                     json.loads(json.dumps(throughput)), "", {})
    # The slow node's host presents the fast node's tests (their cookies) as its own.
    with pytest.raises(DomainError) as refused:
        lifecycle.finish(slow.node, slow_claim.run.pk, slow_claim.attempt.id, True,
                         json.loads(json.dumps(throughput)), "", {})
    assert status_of(refused.value) == 422 and "reference_record_reused" in str(refused.value)


def test_two_results_presenting_one_test_at_once_spend_it_once(
        buyer: Any, enrol_node: Any, reference_endpoint: Any, monkeypatch: Any) -> None:
    # #30: the reuse check and the store were separate, so two results judged at the same
    # moment both passed the check and both stored the one test as verified. Here both pass
    # the check before either stores (the barrier); the unique constraint decides.
    from django.db import connection

    fast, slow = enrol_node("hz-fast"), enrol_node("hz-slow")
    job, _ = submission.submit(buyer.user, [fast.node.pk, slow.node.pk], "network", profile="quick")
    runs = {r.node_id: r for r in job.runs.all()}
    claims = {n.node.pk: lifecycle.claim(n.node, runs[n.node.pk].pk) for n in (fast, slow)}
    throughput = [s for s in reference_samples(claims[fast.node.pk].spec())
                  if s["metric"].startswith("network.tcp_throughput")]
    both_checked = threading.Barrier(2, timeout=30)
    checked = intake._reused

    def check_then_wait(run: Any, spent: Any) -> Any:
        found = checked(run, spent)
        both_checked.wait()
        return found

    monkeypatch.setattr(intake, "_reused", check_then_wait)
    outcomes: dict[str, Any] = {}

    def post(node: Any) -> None:
        claim = claims[node.node.pk]
        try:
            lifecycle.finish(node.node, claim.run.pk, claim.attempt.id, True,
                             json.loads(json.dumps(throughput)), "", {})
            outcomes[node.node.name] = "stored"
        except DomainError as exc:
            outcomes[node.node.name] = exc
        finally:
            connection.close()

    threads = [threading.Thread(target=post, args=(n,)) for n in (fast, slow)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(60)

    assert sorted(o == "stored" for o in outcomes.values()) == [False, True], outcomes
    refused = next(o for o in outcomes.values() if o != "stored")
    assert status_of(refused) == 422 and "reference_record_reused" in str(refused)
    statuses = sorted(Run.objects.filter(job=job).values_list("status", flat=True))
    assert statuses == ["failed", "succeeded"]
    loser = Run.objects.get(job=job, status="failed")
    assert loser.error.startswith("inconsistent result: reference_record_reused")
    assert not Sample.objects.filter(run=loser).exists()


def test_a_test_from_before_the_run_stays_host_reported(buyer: Any, enrol_node: Any,
                                                        reference_endpoint: Any) -> None:
    node = enrol_node("hz-1")
    early, _ = submission.submit(buyer.user, [node.node.pk], "network", profile="quick")
    early_claim = lifecycle.claim(node.node, early.runs.get().pk)
    kept = [s for s in reference_samples(early_claim.spec())
            if s["metric"] == "network.tcp_throughput"]
    # A node runs one run at a time: the early one ends before the next is claimed.
    lifecycle.finish(node.node, early_claim.run.pk, early_claim.attempt.id, False, [], "stopped", {})
    job, _ = submission.submit(buyer.user, [node.node.pk], "network", profile="quick")
    run = job.runs.get()
    claim = lifecycle.claim(node.node, run.pk)
    # The run was claimed a minute after the kept test was made: not a test of this run.
    Run.objects.filter(pk=run.pk).update(started_at=timezone.now() + timedelta(minutes=1))
    lifecycle.finish(node.node, run.pk, claim.attempt.id, True, kept, "", {})
    assert Sample.objects.get(run=run).evidence == "host-reported"


def test_impossible_storage_figures_are_refused_whole(buyer: Any, enrol_node: Any) -> None:
    node = enrol_node("hz-1")
    job, _ = submission.submit(buyer.user, [node.node.pk], "storage")
    # 32 jobs at iodepth 1 with a 5 ms mean latency complete 6,400 I/Os a second, not 2.5 M.
    impossible = FAKE_STORAGE + [sample("storage.randread_lat_mean", 5000.0, "us"),
                                 sample("storage.checkpoint_write", 2.0, "GB/s")]
    response = claim_and_post(node, job, impossible)
    assert response.status_code == 422
    body = response.json()
    assert "2.5e+06 IOPS at a mean latency of 5000 us is 1.25e+04 I/Os in flight" in \
        body["errors"]["littles_law"]
    run = job.runs.get()
    assert run.status == "failed" and run.error.startswith("inconsistent result: littles_law")
    assert not Sample.objects.exists() and not LatestResult.objects.exists()
    assert 'reason="inconsistent:littles_law"' in observability.render()
    honest = [sample("storage.randread_iops", 6_300.0, "IOPS"),
              sample("storage.randread_lat_mean", 5000.0, "us")]
    job, _ = submission.submit(buyer.user, [node.node.pk], "storage")
    assert claim_and_post(node, job, honest).status_code == 200


def test_typed_iops_beyond_the_hosts_enrolled_disks_are_refused(buyer: Any,
                                                                enrol_node: Any) -> None:
    # The issue's claim: 2,000,000 IOPS at 16 us with 32 jobs (Little's law holds) on a host
    # that enrolled with one virtio disk, as the lab's and most cloud instances do.
    node = enrol_node("hz-1", inventory=HONEST_INVENTORY | {
        "disks": [{"name": "vda", "size_bytes": 10**11, "rotational": False, "model": ""}]})
    assert node.node.enrolled_disks == [{"name": "vda", "rotational": False}]
    job, _ = submission.submit(buyer.user, [node.node.pk], "storage")
    typed = [sample("storage.randread_iops", 2_000_000.0, "IOPS"),
             sample("storage.randread_lat_mean", 16.0, "us")]
    # A result's inventory cannot add disks: the enrolled ones bound it.
    response = claim_and_post(node, job, typed, inventory=HONEST_INVENTORY | {
        "disks": [{"name": f"nvme{i}n1", "rotational": False} for i in range(8)]})
    assert response.status_code == 422
    assert "more than the 1 block device(s) the host listed at enrolment (block) serve at " \
        "most: 1e+06" in response.json()["errors"]["iops_within_devices"]
    assert not Sample.objects.exists()


def test_a_gpu_figure_above_the_enrolled_models_peak_is_refused(buyer: Any,
                                                                  enrol_node: Any) -> None:
    inventory = {"gpu": {"available": True, "devices": [{"name": "NVIDIA A100-SXM4-80GB"}]}}
    node = enrol_node("hz-1", inventory=inventory | {"nics": []})
    job, _ = submission.submit(buyer.user, [node.node.pk], "gpu")
    response = claim_and_post(node, job, [sample("gpu.matmul_tflops_bf16", 900.0, "TFLOP/s")],
                              inventory)
    assert response.status_code == 422
    assert "above the published peak of the A100 80GB SXM" in response.json()["errors"]["within_gpu_peak"]
    job, _ = submission.submit(buyer.user, [node.node.pk], "gpu")
    assert claim_and_post(node, job, [sample("gpu.matmul_tflops_bf16", 280.0, "TFLOP/s")],
                          inventory).status_code == 200


def test_a_result_cannot_name_a_faster_gpu_than_the_node_enrolled_with(
        buyer: Any, enrol_node: Any) -> None:
    # On main the model came from the result's own inventory: a GPU-less host named an H200
    # and ranked #1 on the matmul board with 900 TFLOP/s.
    node = enrol_node("hz-1")  # enrolled without a GPU
    h200 = {"gpu": {"available": True, "devices": [{"name": "NVIDIA H200"}]}}
    job, _ = submission.submit(buyer.user, [node.node.pk], "gpu")
    response = claim_and_post(node, job, [sample("gpu.matmul_tflops_bf16", 700.0, "TFLOP/s")],
                              h200)
    assert response.status_code == 422
    assert "fixed at enrolment" in response.json()["errors"]["gpu_model_changed"]
    node.node.refresh_from_db()
    assert node.node.gpu_model == "none" and not LatestResult.objects.exists()


def test_a_flattering_override_is_kept_unranked(buyer: Any, provider_owner: Any,
                                                enrol_node: Any) -> None:
    node = enrol_node("hz-1")
    honest = [sample("storage.randread_iops", 6_300.0, "IOPS"),
              sample("storage.randread_lat_mean", 5000.0, "us")]
    job, _ = submission.submit(buyer.user, [node.node.pk], "storage")
    assert job.runs.get().ranked and claim_and_post(node, job, honest).status_code == 200
    # A 4 MiB file set sits in the page cache: flattering, and not what the profile measures.
    cached = [sample("storage.randread_iops", 600_000.0, "IOPS"),
              sample("storage.randread_lat_mean", 53.0, "us")]
    flattering, _ = submission.submit(provider_owner.user, [node.node.pk], "storage",
                                      {"fio_size_mib": 4})
    assert not flattering.runs.get().ranked
    assert claim_and_post(node, flattering, cached).status_code == 200
    row = board(buyer.client(), "metric=storage.randread_iops&evidence=any")["results"][0]
    assert (row["value"], row["runs"], row["requested_by"]) == (6_300.0, 1, "buyer")
    url = f"/api/v1/nodes/{node.node.pk}/history?metric=storage.randread_iops"
    # The unranked run is its owner's (#30): the provider sees it, marked; a buyer does not.
    history = provider_owner.client().get(url).json()["results"]
    assert [(p["value"], p["note"]) for p in history] == [
        (6_300.0, ""), (600_000.0, "unranked: custom parameters")]
    assert [p["value"] for p in buyer.client().get(url).json()["results"]] == [6_300.0]


def test_a_providers_own_runs_never_replace_a_buyers_figure(
        buyer: Any, provider_owner: Any, enrol_node: Any) -> None:
    node = enrol_node("hz-1")

    def storage_run(owner: Any, iops: float) -> None:
        job, _ = submission.submit(owner.user, [node.node.pk], "storage")
        figures = [sample("storage.randread_iops", iops, "IOPS"),
                   sample("storage.randread_lat_mean", 32 / iops * 1e6, "us")]
        assert claim_and_post(node, job, figures).status_code == 200

    storage_run(provider_owner, 90_000.0)  # alone, the provider's own figure shows, marked
    row = board(buyer.client(), "metric=storage.randread_iops&evidence=any")["results"][0]
    assert (row["value"], row["requested_by"], row["evidence"]) == (90_000.0, "provider",
                                                                     "host-reported")
    storage_run(buyer, 20_000.0)
    for _ in range(5):
        storage_run(provider_owner, 95_000.0)
    row = board(buyer.client(), "metric=storage.randread_iops&evidence=any")["results"][0]
    assert (row["value"], row["runs"], row["requested_by"]) == (20_000.0, 1, "buyer")


def test_a_board_value_is_the_median_of_the_last_runs(buyer: Any, enrol_node: Any,
                                                      settings: Any) -> None:
    settings.LEADERBOARD_RUNS = 3
    node = enrol_node("hz-1")
    for gbs in (0.1, 2.0, 1.0, 1.2, 9.0):
        job, _ = submission.submit(buyer.user, [node.node.pk], "storage")
        assert claim_and_post(node, job, [sample("storage.checkpoint_write", gbs, "GB/s")]
                              ).status_code == 200
    row = board(buyer.client(), "metric=storage.checkpoint_write&evidence=any")["results"][0]
    # The last three: 1.0, 1.2 and 9.0; one lucky run does not make the figure.
    assert (row["value"], row["runs"], row["run_min"], row["run_max"]) == (1.2, 3, 1.0, 9.0)


def claimed_certification(provider_owner: Any, node: Any) -> tuple[CertificationRequest, Any]:
    """The provider asks for the node's certification; the host claims its run."""
    response = provider_owner.client().post(f"/api/v1/nodes/{node.node.pk}/certifications",
                                            {"profile": "single-node-training"}, format="json")
    cert_request = CertificationRequest.objects.get(pk=response.json()["id"])
    return cert_request, lifecycle.claim(node.node, cert_request.job.runs.get().pk)


def certify_without_network_records(provider_owner: Any, node: Any,
                                    capture: Any) -> CertificationRequest:
    cert_request, claim = claimed_certification(provider_owner, node)
    run = claim.run
    typed = [s | {"metadata": {"peer": "reference:hangzhou:ref1"}} for s in FAKE_NETWORK[:1]] + [
        sample("network.tcp_rtt", 0.05, "ms", metadata={"peer": "reference:hangzhou:ref1"}),
        sample("storage.randread_iops", 60_000.0, "IOPS"),
        sample("storage.randread_lat_mean", 533.3, "us"),
        sample("storage.checkpoint_write", 0.6, "GB/s"),
        sample("training.dataloader_samples_per_s", 3000.0, "samples/s")]
    typed[0] = typed[0] | {"value": 9.4, "p5": 9.4, "p95": 9.4, "min": 9.4, "max": 9.4}
    with capture(execute=True):
        lifecycle.finish(node.node, run.pk, claim.attempt.id, True, typed, "", {})
    cert_request.refresh_from_db()
    return cert_request


def test_certification_fails_closed_without_the_references_record(
        provider_owner: Any, enrol_node: Any, reference_endpoint: Any,
        django_capture_on_commit_callbacks: Any) -> None:
    cert_request = certify_without_network_records(provider_owner, enrol_node("hz-1"),
                                                   django_capture_on_commit_callbacks)
    assert cert_request.status == "failed" and cert_request.certificate is None
    criteria = {c["metric"]: c for c in cert_request.outcome["criteria"]}
    assert criteria["network.tcp_throughput"]["status"] == "unverified"
    assert criteria["network.tcp_rtt"]["status"] == "unverified"
    assert "network.tcp_throughput unverified" in cert_request.outcome["reason"]
    assert not Certificate.objects.exists()


def test_a_refused_certification_run_fails_its_request_with_the_reason(
        provider_owner: Any, enrol_node: Any, reference_endpoint: Any,
        django_capture_on_commit_callbacks: Any) -> None:
    # A host that posts impossible figures for its certification run gets no certificate,
    # and its request does not wait forever: it is judged on the failed run.
    node = enrol_node("hz-1")
    cert_request, claim = claimed_certification(provider_owner, node)
    run = claim.run
    impossible = FAKE_STORAGE + [sample("storage.randread_lat_mean", 5000.0, "us")]
    with django_capture_on_commit_callbacks(execute=True), pytest.raises(DomainError) as refused:
        lifecycle.finish(node.node, run.pk, claim.attempt.id, True, impossible, "", {})
    assert status_of(refused.value) == 422
    cert_request.refresh_from_db()
    assert cert_request.status == "failed" and cert_request.certificate is None
    assert "inconsistent result: littles_law" in cert_request.outcome["reason"]
    assert not Certificate.objects.exists()


@pytest.fixture
def issued(provider_owner: Any, enrol_node: Any, reference_endpoint: Any,
           django_capture_on_commit_callbacks: Any) -> Certificate:
    node = enrol_node("hz-1")
    response = provider_owner.client().post(f"/api/v1/nodes/{node.node.pk}/certifications",
                                            {"profile": "single-node-training"}, format="json")
    cert_request = CertificationRequest.objects.get(pk=response.json()["id"])
    run = cert_request.job.runs.get()
    claim = lifecycle.claim(node.node, run.pk)
    samples = reference_samples(claim.spec()) + [
        sample("storage.randread_iops", 60_000.0, "IOPS"),
        sample("storage.randread_lat_mean", 533.3, "us"),
        sample("storage.checkpoint_write", 0.6, "GB/s"),
        sample("training.dataloader_samples_per_s", 3000.0, "samples/s")]
    with django_capture_on_commit_callbacks(execute=True):
        lifecycle.finish(node.node, run.pk, claim.attempt.id, True, samples, "",
                         {"gpu": {"available": False, "reason": "no NVIDIA GPU"}})
    cert_request.refresh_from_db()
    assert cert_request.certificate is not None, cert_request.outcome
    return cert_request.certificate


def test_a_host_without_a_gpu_gets_no_medal(issued: Certificate) -> None:
    # On main this was gold: the GPU criterion "not applicable" counted as passed.
    assert issued.tier == "partial"
    assert issued.document["title"].startswith("certified without GPU")
    assert criteria.TIER_ORDER.index("partial") > criteria.TIER_ORDER.index("bronze")


def test_evaluating_twice_issues_one_certificate(issued: Certificate) -> None:
    job_id = issued.request.job_id
    certification.on_job_finished(job_id)  # a second run finishing: the evaluation is taken
    assert Certificate.objects.count() == 1


def test_a_revoked_node_revokes_its_certificates(issued: Certificate,
                                                 django_capture_on_commit_callbacks: Any) -> None:
    with django_capture_on_commit_callbacks(execute=True):
        revocation.revoke(issued.node, "caught cheating")
    issued.refresh_from_db()
    assert not issued.valid and issued.revoked_reason == "node revoked: caught cheating"


class Attacker(BaseHTTPRequestHandler):
    """The attacker's "issuer": serves its own key and says every certificate is valid."""

    pem = b""
    requests: list[str] = []

    def do_GET(self) -> None:  # noqa: N802 - http.server's name
        Attacker.requests.append(self.path)
        if self.path.endswith("/public-key"):
            body = json.dumps({"public_key_pem": self.pem.decode()})
        else:
            body = json.dumps({"status": "valid"})
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.end_headers()
        self.wfile.write(body.encode())

    def log_message(self, *args: Any) -> None:
        pass


def verify(*args: str, store: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "workers.cli", "verify", *args], cwd=REPO,
                          capture_output=True, text=True, timeout=60, check=False,
                          env={"BENCH_TRUSTED_KEYS": str(store), "PATH": "/usr/bin:/bin"})


def forge(document: dict[str, Any], key: Ed25519PrivateKey, path: Path) -> None:
    signature = base64.b64encode(key.sign(certificate.canonical(document))).decode()
    path.write_text(json.dumps({"document": document, "signature": signature}))


def test_a_certificate_signed_with_the_attackers_own_key_is_not_valid(
        issued: Certificate, tmp_path: Path) -> None:
    attacker_key = Ed25519PrivateKey.generate()
    Attacker.pem = attacker_key.public_key().public_bytes(
        serialization.Encoding.PEM, serialization.PublicFormat.SubjectPublicKeyInfo)
    Attacker.requests = []
    server = HTTPServer(("127.0.0.1", 0), Attacker)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        forged = json.loads(json.dumps(issued.document)) | {"tier": "gold"}
        forged["issuer"] = {"url": f"http://127.0.0.1:{server.server_port}",
                            "key_id": trust_store.key_id(Attacker.pem)}
        path, store = tmp_path / "forged.json", tmp_path / "trusted.pem"
        forge(forged, attacker_key, path)
        # Nothing pinned: on main this printed VALID from the attacker's own key and answer.
        done = verify(str(path), store=store)
        assert done.returncode == 2 and "no trusted key" in done.stderr
        assert not any(p.endswith("/public-key") for p in Attacker.requests)
        # The platform's key pinned, the forgery naming its key id: the signature fails.
        trust_store.add(signing.public_pem(), "http://127.0.0.1:1", store)
        forged["issuer"]["key_id"] = signing.key_id()
        forge(forged, attacker_key, path)
        done = verify(str(path), store=store)
        assert done.returncode == 1 and "signature does not match" in done.stdout
        assert Attacker.requests == []  # the attacker's issuer was never asked anything
    finally:
        server.shutdown()


def test_an_unreachable_issuer_makes_revocation_unknown(issued: Certificate,
                                                        tmp_path: Path) -> None:
    store = tmp_path / "trusted.pem"
    trust_store.add(signing.public_pem(), "http://127.0.0.1:1", store)  # nobody listens there
    path = tmp_path / "cert.json"
    path.write_text(json.dumps({"document": issued.document, "signature": issued.signature}))
    done = verify(str(path), store=store)
    assert done.returncode == 2 and "revocation unknown" in done.stdout
    done = verify(str(path), "--offline", store=store)
    assert done.returncode == 0 and done.stdout.startswith("VALID")


def test_benchctl_trusts_a_key_once_and_checks_revocation_with_its_platform(
        transactional_db: Any, live_server: Any, issued: Certificate, tmp_path: Path) -> None:
    store = tmp_path / "trusted.pem"
    added = subprocess.run([sys.executable, "-m", "workers.cli", "trust", "add", live_server.url],
                           cwd=REPO, capture_output=True, text=True, timeout=60, check=False,
                           env={"BENCH_TRUSTED_KEYS": str(store), "PATH": "/usr/bin:/bin"})
    assert added.returncode == 0, added.stderr
    assert f"trusted key {signing.key_id()}" in added.stdout
    assert trust_store.fingerprint(signing.public_pem()) in added.stdout
    path = tmp_path / "cert.json"
    path.write_text(json.dumps({"document": issued.document, "signature": issued.signature}))
    done = verify(str(path), store=store)  # asks the platform the key was pinned from
    assert done.returncode == 0 and "checked online: not revoked" in done.stdout, done.stdout
    certification.revoke(issued, "operator: cooling failure")
    done = verify(str(path), store=store)  # asks the platform the key was pinned from
    assert done.returncode == 1 and "REVOKED" in done.stdout
