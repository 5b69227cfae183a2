"""Links and clusters on shaped links (#15): real namespaces, tbf, node workers, iperf3, DDP.

Three 800 Mbit/s nodes and a 400 Mbit/s one of the same provider, one reference. Every job
uses the published quick profile, so its figures rank. The rates are where tbf is exact
(every figure within 0.5% of the shaped rate here) and the gradients cross quickly: the
training jobs' time is mostly their gradients on the wire, and at 200 and 100 Mbit/s the
two took 82 and 135 s, at 800 and 400 36 and 56 s (at 50 Mbit/s the slow one alone took
four minutes). The network job's time is its turns at the one reference, whatever the rate.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from board.models import ClusterResult, LatestResult, LinkResult
from jobs.models import Run
from jobs.services import submission
from lab.procs import wait_for
from lab.stack import LabStack
from tests.labtests.labs import lab_of

# Alone after the parallel part: beside it (with the demo) it loaded two cores so far that
# the certification tests' loopback RTT bound (5 ms) failed at 9-28 ms (#31, stop 41).
pytestmark = [
    pytest.mark.slow,
    pytest.mark.serial,
    pytest.mark.skipif(os.geteuid() != 0, reason="the lab needs root (ip netns, tc)"),
]

FAST, SLOW = 800, 400  # Mbit/s
# What TCP carries of a shaped rate: tbf counts whole frames (1514 bytes with the Ethernet
# header) and each carries 1448 bytes of payload (timestamps on). Figures are compared with
# this within 5%.
GOODPUT = 1448 / 1514


def carried(mbit: float) -> float:
    return mbit / 1000 * GOODPUT


@pytest.fixture
def lab(live_server: Any, private_redis: Any, provider: Any, provider_owner: Any, hangzhou: Any,
        tmp_path: Path) -> Iterator[LabStack]:
    node = {"kind": "node", "region": "hangzhou", "provider": provider.name}
    yield from lab_of({"name": "lc", "hosts": [
        node | {"name": "f1", "rate_mbit": FAST}, node | {"name": "f2", "rate_mbit": FAST},
        node | {"name": "f3", "rate_mbit": FAST}, node | {"name": "s1", "rate_mbit": SLOW},
        {"name": "ref", "kind": "reference", "region": "hangzhou"}]},
        live_server, private_redis, provider_owner, tmp_path)


def run_job(buyer: Any, lab: LabStack, names: list[str], suite: str) -> Any:
    job, _ = submission.submit(buyer.user, [lab.nodes[n].node_id for n in names], suite,
                               profile="quick")
    wait_for(lambda: not Run.objects.filter(job=job, status__in=["queued", "running"]).exists(),
             600, f"the {suite} job on {names}", interval=1.0)
    for run in Run.objects.filter(job=job):
        assert run.status == "succeeded", (run.node.name, run.error)
    return job


def links(job: Any) -> dict[tuple[str, str], LinkResult]:
    wait_for(lambda: LinkResult.objects.filter(job=job).exists(), 30, "the link results")
    return {(li.source.name, li.target.name): li
            for li in LinkResult.objects.filter(job=job).select_related("source", "target")}


def board_value(node_id: int) -> float:
    return LatestResult.objects.get(node_id=node_id, metric="network.tcp_throughput",
                                    profile="quick", evidence=LatestResult.VERIFIED).value


def test_links_and_clusters_on_shaped_links(lab: LabStack, buyer: Any) -> None:
    # Four nodes of one region at once, the slow one among them: all get their turns at the
    # one reference (on main before #15 both nodes of such a job failed, "the server is busy
    # running a test"), then six rounds of the link matrix.
    names = ["f1", "f2", "f3", "s1"]
    job = run_job(buyer, lab, names, "network")
    for run in Run.objects.filter(job=job).select_related("node"):
        forward = run.samples.get(metric="network.tcp_throughput",
                                  metadata__peer__startswith="reference:")
        shaped = carried(SLOW if run.node.name == "s1" else FAST)
        print(f"{run.node.name}: {forward.value:.4f} Gbit/s to the reference (TCP on the shaped "
              f"link: {shaped:.4f}), waited {forward.metadata['reference_wait_s']} s for its turns")
        assert forward.value == pytest.approx(shaped, rel=0.05)
    measured = links(job)
    for (a, b), li in sorted(measured.items()):
        print(f"{a} -> {b}: {li.throughput_gbps:.4f} Gbit/s (sender {li.sender_gbps:.4f}, "
              f"receiver {li.receiver_gbps}, agreed {li.agreed}), RTT {li.rtt_ms} ms")
    # The fast node's board figure is its own link's, the slow node beside it in the job.
    assert board_value(lab.nodes["f1"].node_id) == pytest.approx(carried(FAST), rel=0.05)
    # The lab's hosts are one machine (one machine-id): the four runs ran beside each other,
    # and each value says so (board.beside); none was measured alone to prefer.
    for name in names:
        row = LatestResult.objects.get(node_id=lab.nodes[name].node_id, profile="quick",
                                       metric="network.tcp_throughput",
                                       evidence=LatestResult.VERIFIED)
        assert row.shared and row.runs_apart == 0, (name, row.shared, row.runs_apart)
    assert not LatestResult.objects.filter(metric__startswith="network.internode").exists()
    assert len(measured) == 12
    for (a, b), li in measured.items():
        # Both ends counted the same; one provider's hosts, so agreed, not confirmed.
        assert li.agreed and not li.confirmed, (a, b, li.sender_gbps, li.receiver_gbps)
        assert li.throughput_gbps == pytest.approx(carried(SLOW if "s1" in (a, b) else FAST),
                                                   rel=0.05), (a, b)
    # Two 3-node clusters of one provider: the one with the slow node ranks second, named.
    run_job(buyer, lab, ["f1", "f2", "f3"], "training")
    run_job(buyer, lab, ["f1", "f2", "s1"], "training")
    wait_for(lambda: ClusterResult.objects.count() == 2, 30, "the cluster results")
    # The provider's own hosts ran them: their claims, ranked when every figure is asked for.
    board = buyer.client().get("/api/v1/clusters?size=3&evidence=any").json()["results"]
    assert {r["evidence"] for r in board} == {"host-reported"}
    for row in board:
        print(f"#{row['rank']} {row['name']} {[n['name'] for n in row['nodes']]}: "
              f"{row['samples_per_s']} samples/s, slowest link {row['slowest_link_gbps']} Gbit/s, "
              f"{[f['verdict'] for f in row['diagnosis']]}")
    assert [sorted(n["name"] for n in r["nodes"]) for r in board] == [["f1", "f2", "f3"],
                                                                      ["f1", "f2", "s1"]]
    assert any(f["code"] == "slow-node" and f["verdict"].startswith("s1:")
               for f in board[1]["diagnosis"])


def test_the_transformer_and_the_convnet_train_across_two_lab_nodes(
        lab: LabStack, buyer: Any) -> None:
    # The quick profile's sizes (model_mib 8): small GPT-2- and ResNet-50-shaped models, one
    # rank on each of two hosts, gloo over the shaped link. The two jobs run at once on
    # disjoint pairs (one lab, one wait: each was a lab of its own and a minute apart).
    # What this test reads is the DDP step: the suite's other parts (the all-reduce sweep,
    # the DataLoader settings), which the first test and the probe's own tests prove, are cut
    # (#31). The sweep keeps 8 MiB as its largest message:
    # a largest message within a tbf burst would rightly be refused by the strict busbw bound.
    lean = {"training_ranks": 1, "allreduce_max_mib": 8, "dataloader_samples": 64,
            "repetitions": 2}
    jobs = {model: submission.submit(buyer.user, [lab.nodes[n].node_id for n in pair],
                                     "training", lean | {"training_model": model},
                                     profile="quick")[0]
            for model, pair in (("transformer", ("f1", "f2")), ("convnet", ("f3", "s1")))}
    wait_for(lambda: not Run.objects.filter(job__in=jobs.values(),
                                            status__in=["queued", "running"]).exists(),
             600, "the transformer and the convnet jobs", interval=1.0)
    for model, job in jobs.items():
        for run in Run.objects.filter(job=job):
            assert run.status == "succeeded", (model, run.node.name, run.error)
        first = Run.objects.filter(job=job).order_by("id").first()
        assert first is not None
        step = first.samples.get(metric="training.step_time")
        meta = step.metadata
        assert meta["model"] == model and meta["world_size"] == 2 and meta["nnodes"] == 2
        assert meta["gradient_bytes"] == 4 * meta["model_params"] and meta["ddp_buckets"] >= 1
        # Gradients of a real shape cross the shaped link: the sync shows in the step.
        assert first.samples.get(metric="training.comm_share").value > 0.05, model
