"""One test per diagnosis rule: it fires on the numbers it is about, and only then."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from benchmarks.parsers import rdma
from board import clusters
from board.diagnosis import diagnose
from board.models import ClusterResult
from jobs.services import lifecycle, submission

RDMA = Path(__file__).resolve().parent.parent / "data" / "rdma"


def codes(values: dict[str, float]) -> list[str]:
    return [f.code for f in diagnose(values)]


def test_a_high_comm_share_with_an_idle_gpu_is_communication_bound() -> None:
    assert codes({"training.comm_share": 0.45, "training.gpu_util_mean": 60}) == ["communication-bound"]


def test_a_busy_gpu_is_not_communication_bound_whatever_the_share() -> None:
    assert codes({"training.comm_share": 0.45, "training.gpu_util_mean": 95}) == []


def test_a_low_comm_share_is_fine() -> None:
    assert codes({"training.comm_share": 0.2}) == []


def test_a_big_gain_from_more_loader_workers_is_input_bound() -> None:
    findings = diagnose({"training.dataloader_gain": 3.0})
    assert [f.code for f in findings] == ["input-bound"]
    assert "num_workers" in findings[0].advice


def test_small_files_much_slower_than_packed_says_pack_them() -> None:
    assert codes({"storage.smallfile_read": 1000, "storage.packedfile_read": 5000}) == ["small-files"]
    assert codes({"storage.smallfile_read": 1000, "storage.packedfile_read": 1500}) == []


def test_over_10_ms_to_the_region_is_high_latency() -> None:
    assert codes({"network.tcp_rtt": 12.0}) == ["high-latency"]
    assert codes({"network.tcp_rtt": 4.0}) == []


def test_under_10_gbit_between_nodes_is_a_slow_network() -> None:
    assert codes({"network.internode_throughput": 1.0}) == ["slow-network"]
    assert codes({"network.internode_throughput": 25.0}) == []


def test_an_honest_10_gbe_link_is_not_called_slow() -> None:
    # TCP goodput over 10 GbE measures 9.4-9.6 Gbit/s; the rule is stated in link classes.
    assert codes({"network.internode_throughput": 9.54}) == []
    assert codes({"network.internode_throughput": 8.5}) == ["slow-network"]


def test_slow_checkpoint_writes_are_flagged() -> None:
    assert codes({"storage.checkpoint_write": 0.2}) == ["slow-checkpoints"]
    assert codes({"storage.checkpoint_write": 2.0}) == []


def test_rdma_ports_on_the_hosts_while_nccl_used_sockets_between_nodes_is_flagged(
        buyer: Any, enrol_node: Any, django_capture_on_commit_callbacks: Any) -> None:
    # The hosts' inventories list RDMA as the host inventory reads it from /sys; each node's
    # busbw sample carries the transport its NCCL log named (tests/data/rdma, tests/data/nccl).
    with_ib = rdma.inventory(RDMA / "ib_hdr_active", None)
    without = rdma.inventory(RDMA / "none", None)
    nodes = [enrol_node(f"hz-{i}", address=f"10.0.0.{i + 2}") for i in range(4)]

    def cluster(pair: list[Any], inventory: dict[str, Any], transport: str) -> list[str]:
        with django_capture_on_commit_callbacks(execute=True):
            job, _ = submission.submit(buyer.user, [e.node.pk for e in pair], "training")
            for e, run in zip(pair, job.runs.order_by("id"), strict=True):
                claim = lifecycle.claim(e.node, run.pk)
                lifecycle.finish(e.node, run.pk, claim.attempt.id, True,
                                 training_samples(transport), "", {"rdma": inventory})
        found = clusters.diagnose(ClusterResult.objects.get(job=job), [])
        return [f.verdict for f in found if f.code == "rdma-unused"]

    assert cluster(nodes[:2], with_ib, "NET/Socket") == [
        "hz-0, hz-1: the host shows active RDMA ports, but NCCL sent between the nodes over "
        "TCP sockets (NET/Socket)"]
    assert cluster(nodes[2:], with_ib, "NET/IB") == []  # RDMA carried it
    assert cluster(nodes[:2], without, "NET/Socket") == []  # no RDMA offered: sockets are all


def training_samples(transport: str) -> list[dict[str, Any]]:
    def sample(metric: str, value: float, unit: str, **metadata: Any) -> dict[str, Any]:
        return {"metric": metric, "value": value, "unit": unit, "n": 3, "p5": value,
                "p95": value, "min": None, "max": None, "cv": 0.01, "metadata": metadata}

    busbw = {"transport": transport, "net_device": "mlx5_0:1/IB"}
    return [sample("training.step_time", 100.0, "ms", world_size=4, nnodes=2),
            sample("training.compute_time", 60.0, "ms"),
            sample("training.comm_share", 0.4, "ratio"),
            sample("training.samples_per_s", 32 * 4 / 0.1, "samples/s"),
            sample("training.allreduce_busbw", 1.0, "GB/s", **busbw),
            sample("training.allreduce_busbw_largest", 1.0, "GB/s", **busbw)]
