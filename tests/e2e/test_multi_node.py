"""Multi-node jobs: the node-to-node matrix, and a node that never arrives."""

from __future__ import annotations

from typing import Any

import pytest

from board.models import ClusterResult, LinkResult
from jobs.models import Run
from jobs.services import submission
from lab.procs import free_port, node_ports, wait_for

pytestmark = pytest.mark.slow

# Two repetitions, no more: what these tests read is the mesh, not a figure's precision.
QUICK = {"iperf3_duration": 1, "iperf3_omit": 0, "repetitions": 2, "max_repetitions": 2,
         "ping_count": 3}


def finished(job: Any) -> bool:
    return not Run.objects.filter(job=job, status__in=["queued", "running"]).exists()


def test_three_nodes_measure_their_links_both_ways_and_share_their_regions_reference(
        live_server: Any, buyer: Any, enrol_node: Any, reference_endpoint: Any,
        worker_factory: Any) -> None:
    # One job proves both (#31: they were a two-node and a three-node job, a minute apart):
    # the node-to-node matrix both ways, and three nodes taking turns at one reference. On
    # main before the turns: "iperf3 to reference:... failed: the server is busy running a
    # test" once a node waited longer than its retries.
    nodes = [enrol_node(f"hz-{i}", api_url=live_server.url, address="127.0.0.1",
                        iperf3_port=node_ports()) for i in (1, 2, 3)]
    worker_factory.many([(n.config_path, f"w-mesh-{n.node.name}") for n in nodes])
    job, _ = submission.submit(buyer.user, [n.node.pk for n in nodes], "network", QUICK)
    wait_for(lambda: finished(job), 240, "the three runs to finish")

    names = {n.node.pk: n.node.name for n in nodes}
    waits = []
    for run in Run.objects.filter(job=job):
        assert run.status == "succeeded", run.error
        links = run.samples.filter(metric="network.internode_throughput")
        others = {f"node:{name}" for pk, name in names.items() if pk != run.node_id}
        assert {s.metadata["peer"] for s in links} == others
        assert all(s.value > 0.1 for s in links)
        rtts = run.samples.filter(metric="network.internode_rtt")
        # Timed over TCP, echoed by the peer's test server, not pinged, every round trip
        # counted. The figure is loopback's plus the peer's echo waiting for a CPU: the other
        # pairs' iperf3 tests and, in CI, the other tests saturate both cores (CI: even the
        # fastest of three echoes over 1 ms), which ping's answer from the kernel never met.
        # So the bound here is loopback's under that load; the figure's exactness against a
        # modelled path is the geography lab's test (tests/labtests/test_geography_lab.py).
        assert {s.metadata["tool"] for s in rtts} == {"tcp echo"}
        assert rtts.count() == 2 and all(s.n == QUICK["ping_count"] for s in rtts)
        assert all(s.min is not None and s.min <= s.value < 50.0 for s in rtts), [
            (s.min, s.value) for s in rtts]
        forward = run.samples.get(metric="network.tcp_throughput",
                                  metadata__peer="reference:hangzhou:ref1")
        waits.append(forward.metadata["reference_wait_s"])
    assert max(waits) > 1.0, waits  # someone waited for a turn instead of failing
    # Each direction is a link result with both ends' views: the receiving node's own
    # iperf3 server log counted the same tests (by cookie) as the sender.
    wait_for(lambda: LinkResult.objects.filter(job=job).count() == 6, 30, "the link results")
    for link in LinkResult.objects.filter(job=job):
        assert link.receiver_gbps is not None and link.agreed, (
            link.sender_gbps, link.receiver_gbps)
        assert link.throughput_gbps == link.receiver_gbps
    assert {(li.source.name, li.target.name) for li in LinkResult.objects.filter(job=job)} == {
        (a, b) for a in names.values() for b in names.values() if a != b}


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
