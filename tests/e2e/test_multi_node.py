"""Multi-node jobs: the node-to-node matrix, and a node that never arrives."""

from __future__ import annotations

from typing import Any

import pytest

from board.models import ClusterResult, LinkResult
from jobs.models import Run
from jobs.services import submission
from lab.procs import free_port, wait_for

pytestmark = pytest.mark.slow

QUICK = {"iperf3_duration": 1, "iperf3_omit": 0, "repetitions": 2, "ping_count": 3}


def finished(job: Any) -> bool:
    return not Run.objects.filter(job=job, status__in=["queued", "running"]).exists()


def test_two_nodes_measure_the_link_between_them_both_ways(
        live_server: Any, buyer: Any, enrol_node: Any, reference_endpoint: Any,
        worker_factory: Any) -> None:
    nodes = [enrol_node(f"hz-{i}", api_url=live_server.url, address="127.0.0.1",
                        iperf3_port=free_port()) for i in (1, 2)]
    worker_factory.many([(n.config_path, f"w-mesh-{n.node.name}") for n in nodes])
    job, _ = submission.submit(buyer.user, [n.node.pk for n in nodes], "network", QUICK)
    wait_for(lambda: finished(job), 120, "both runs to finish")

    for run in Run.objects.filter(job=job):
        assert run.status == "succeeded", run.error
        links = run.samples.filter(metric="network.internode_throughput")
        peers = {s.metadata["peer"] for s in links}
        other = next(n.node.name for n in nodes if n.node.pk != run.node_id)
        assert peers == {f"node:{other}"}
        assert links.get().value > 0.1
        assert run.samples.filter(metric="network.internode_rtt").get().value < 1.0
    # Each direction is a link result with both ends' views: the receiving node's own
    # iperf3 server log counted the same tests (by cookie) as the sender.
    wait_for(lambda: LinkResult.objects.filter(job=job).count() == 2, 30, "the link results")
    for link in LinkResult.objects.filter(job=job):
        assert link.receiver_gbps is not None and link.agreed, (
            link.sender_gbps, link.receiver_gbps)
        assert link.throughput_gbps == link.receiver_gbps
    assert {(li.source.name, li.target.name) for li in LinkResult.objects.filter(job=job)} == {
        ("hz-1", "hz-2"), ("hz-2", "hz-1")}


def test_three_nodes_of_one_region_share_its_reference_and_all_succeed(
        live_server: Any, buyer: Any, enrol_node: Any, reference_endpoint: Any,
        worker_factory: Any) -> None:
    # On main: "iperf3 to reference:... failed: the server is busy running a test" once a
    # node waited longer than its retries; the platform now hands out turns.
    nodes = [enrol_node(f"hz-{i}", api_url=live_server.url, address="127.0.0.1",
                        iperf3_port=free_port()) for i in (1, 2, 3)]
    worker_factory.many([(n.config_path, f"w-ref-{n.node.name}") for n in nodes])
    job, _ = submission.submit(buyer.user, [n.node.pk for n in nodes], "network",
                               QUICK)
    wait_for(lambda: finished(job), 240, "the three runs to finish")
    waits = []
    for run in Run.objects.filter(job=job):
        assert run.status == "succeeded", run.error
        forward = run.samples.get(metric="network.tcp_throughput",
                                  metadata__peer="reference:hangzhou:ref1")
        waits.append(forward.metadata["reference_wait_s"])
    assert max(waits) > 1.0, waits  # someone waited for a turn instead of failing


def test_a_node_that_never_arrives_fails_the_job_with_its_name(
        live_server: Any, buyer: Any, enrol_node: Any, reference_endpoint: Any,
        worker_factory: Any) -> None:
    here = enrol_node("hz-here", api_url=live_server.url, address="127.0.0.1",
                      iperf3_port=free_port())
    away = enrol_node("hz-away", api_url=live_server.url, address="127.0.0.1",
                      iperf3_port=free_port())
    worker_factory(here.config_path, "w-mesh-here")
    job, _ = submission.submit(buyer.user, [here.node.pk, away.node.pk], "network",
                               QUICK | {"barrier_timeout": 5})
    run = Run.objects.get(job=job, node=here.node)
    wait_for(lambda: Run.objects.get(pk=run.pk).status == "failed", 90, "the run to give up")
    run.refresh_from_db()
    assert "waiting at network-start for node(s) hz-away, which never arrived" in run.error


TRAINING = {"training_ranks": 1, "model_mib": 2, "train_steps": 5, "training_batch": 8,
            "allreduce_max_mib": 4, "dataloader_samples": 128, "repetitions": 2}


def test_two_nodes_run_one_ddp_job_across_them(
        live_server: Any, buyer: Any, enrol_node: Any, worker_factory: Any) -> None:
    nodes = [enrol_node(f"hz-{i}", api_url=live_server.url, address="127.0.0.1",
                        iperf3_port=free_port()) for i in (1, 2)]
    worker_factory.many([(n.config_path, f"w-ddp-{n.node.name}") for n in nodes])
    job, _ = submission.submit(buyer.user, [n.node.pk for n in nodes], "training", TRAINING)
    wait_for(lambda: finished(job), 240, "the DDP job to finish")

    for run in Run.objects.filter(job=job):
        assert run.status == "succeeded", run.error
        step = run.samples.get(metric="training.step_time")
        assert (step.metadata["world_size"], step.metadata["nnodes"]) == (2, 2)
        assert step.metadata["socket_ifname"].get("GLOO_SOCKET_IFNAME") == "lo"
        assert run.samples.get(metric="training.allreduce_busbw").value > 0
        assert 0 <= run.samples.get(metric="training.comm_share").value <= 1
    # The DDP figures are the node set's, not each node's.
    wait_for(lambda: ClusterResult.objects.filter(job=job).exists(), 30, "the cluster result")
    cluster = ClusterResult.objects.get(job=job)
    assert cluster.size == 2 and cluster.offer and cluster.figures["training.step_time"]["value"] > 0
