"""The metrics a probe may report: unit, plausible range, and which way is better.

Shared by both sides: probes name their samples from here, and the platform validates
what an (untrusted) host posts against the same table.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Metric:
    name: str
    unit: str
    low: float  # smallest plausible value (inclusive)
    high: float  # largest plausible value (inclusive)
    higher_is_better: bool
    label: str
    # The platform can check it against a reference endpoint's own record of the test
    # (its iperf3 server's JSON log, its echo server's round trips).
    verifiable: bool = False
    # The value is a mean, not the median of repetitions: it may lie outside p5..p95.
    mean: bool = False


_METRICS = [
    Metric("network.icmp_rtt_avg", "ms", 0.0, 10_000.0, False, "ICMP RTT avg", mean=True),
    Metric("network.icmp_rtt_min", "ms", 0.0, 10_000.0, False, "ICMP RTT min"),
    Metric("network.icmp_rtt_max", "ms", 0.0, 10_000.0, False, "ICMP RTT max"),
    Metric("network.icmp_rtt_mdev", "ms", 0.0, 10_000.0, False, "ICMP RTT mdev (jitter)"),
    Metric("network.icmp_loss", "%", 0.0, 100.0, False, "ICMP loss"),
    # 1 stream, candidate -> peer, as the receiving peer's iperf3 counted it (goodput:
    # what arrived); "_sent" is the candidate's own count of what it sent; "_reverse" is
    # peer -> candidate (iperf3 -R), counted by the candidate as receiver.
    Metric("network.tcp_throughput", "Gbit/s", 0.0, 1_000.0, True, "TCP throughput",
           verifiable=True),
    Metric("network.tcp_throughput_sent", "Gbit/s", 0.0, 1_000.0, True,
           "TCP throughput (sender's count)"),
    Metric("network.tcp_throughput_reverse", "Gbit/s", 0.0, 1_000.0, True,
           "TCP throughput (reverse)", verifiable=True),
    Metric("network.tcp_throughput_parallel", "Gbit/s", 0.0, 1_000.0, True,
           "TCP throughput, parallel streams", verifiable=True),
    Metric("network.hop_count", "count", 0.0, 255.0, False, "route hops (tracepath)"),
    # Node to node, within one multi-node job: this node towards each peer.
    Metric("network.internode_throughput", "Gbit/s", 0.0, 1_000.0, True,
           "inter-node TCP throughput"),
    Metric("network.internode_rtt", "ms", 0.0, 10_000.0, False, "inter-node RTT (ICMP avg)"),
    # The receiving node's own iperf3 server log of the tests its peers sent it (each
    # test's cookie and count in the metadata): the other end's view of the same links.
    Metric("network.internode_received", "Gbit/s", 0.0, 1_000.0, True,
           "inter-node TCP throughput, as the receiver counted it"),
    Metric("network.tcp_retransmits", "count", 0.0, 1e9, False, "TCP retransmits"),
    # Round trips of one byte over an open TCP connection to the peer's echo server.
    Metric("network.tcp_rtt", "ms", 0.0, 10_000.0, False, "TCP RTT (echo)", verifiable=True),
    # The sender's smoothed RTT during the iperf3 test: RTT under load (queueing included).
    Metric("network.tcp_rtt_loaded", "ms", 0.0, 10_000.0, False, "TCP RTT under load (iperf3)"),
    Metric("training.step_time", "ms", 0.0, 1e7, False, "DDP step time (median)"),
    Metric("training.step_time_p95", "ms", 0.0, 1e7, False, "DDP step time p95"),
    Metric("training.samples_per_s", "samples/s", 0.0, 1e9, True, "DDP training throughput"),
    # The same steps under ddp.no_sync(): forward, backward and optimizer without all-reduce.
    Metric("training.compute_time", "ms", 0.0, 1e7, False, "DDP step compute time (no sync)"),
    Metric("training.comm_share", "ratio", 0.0, 1.0, False, "Share of step time in gradient sync"),
    Metric("training.comm_share_accum4", "ratio", 0.0, 1.0, False,
           "Gradient sync share, accumulation 4"),
    Metric("training.comm_share_accum8", "ratio", 0.0, 1.0, False,
           "Gradient sync share, accumulation 8"),
    # nccl-tests conventions: busbw = algbw * 2(n-1)/n.
    Metric("training.allreduce_busbw", "GB/s", 0.0, 100_000.0, True, "All-reduce bus bandwidth (peak)"),
    Metric("training.allreduce_busbw_largest", "GB/s", 0.0, 100_000.0, True,
           "All-reduce bus bandwidth (largest message)"),
    Metric("training.dataloader_samples_per_s", "samples/s", 0.0, 1e9, True,
           "DataLoader throughput (best settings)"),
    Metric("training.dataloader_gain", "ratio", 0.0, 10_000.0, True,
           "DataLoader speed-up over num_workers=0"),
    Metric("training.gpu_util_mean", "%", 0.0, 100.0, True, "GPU utilisation during DDP (mean)",
           mean=True),
    Metric("training.gpu_util_p5", "%", 0.0, 100.0, True, "GPU utilisation during DDP (p5)"),
    Metric("training.gpu_util_below80", "ratio", 0.0, 1.0, False, "Share of time GPU under 80% busy"),
    Metric("training.gpu_power_mean", "W", 0.0, 10_000.0, False, "GPU power during DDP (mean)",
           mean=True),
    Metric("gpu.matmul_tflops_fp32", "TFLOP/s", 0.0, 10_000.0, True, "Matmul fp32"),
    Metric("gpu.matmul_tflops_bf16", "TFLOP/s", 0.0, 100_000.0, True, "Matmul bf16"),
    # Read + write bytes per second, as CUDA's bandwidthTest counts device-to-device copies.
    Metric("gpu.memcpy_bw", "GB/s", 0.0, 100_000.0, True, "Device memory copy bandwidth"),
    Metric("storage.randread_iops", "IOPS", 0.0, 1e9, True, "4 KiB random read IOPS (fio)"),
    Metric("storage.randread_clat_p50", "us", 0.0, 1e7, False, "4 KiB random read latency p50"),
    Metric("storage.randread_clat_p99", "us", 0.0, 1e7, False, "4 KiB random read latency p99"),
    Metric("storage.randread_clat_p999", "us", 0.0, 1e7, False, "4 KiB random read latency p99.9"),
    # fio's mean total latency: with the IOPS and the jobs in flight, Little's law.
    Metric("storage.randread_lat_mean", "us", 0.0, 1e7, False, "4 KiB random read latency mean"),
    Metric("storage.seqread_bw", "GB/s", 0.0, 1_000.0, True, "1 MiB sequential read (fio)"),
    Metric("storage.seqwrite_bw", "GB/s", 0.0, 1_000.0, True, "1 MiB sequential write (fio)"),
    Metric("storage.checkpoint_write", "GB/s", 0.0, 1_000.0, True, "torch.save + fsync"),
    Metric("storage.checkpoint_read", "GB/s", 0.0, 1_000.0, True, "torch.load"),
    Metric("storage.smallfile_read", "files/s", 0.0, 1e9, True, "small files via DataLoader"),
    Metric("storage.packedfile_read", "files/s", 0.0, 1e9, True,
           "same records packed in one file via DataLoader"),
    Metric("storage.randread_iops_tmpfs", "IOPS", 0.0, 1e9, True,
           "4 KiB random read IOPS on tmpfs (fio)"),
    Metric("storage.randread_clat_p50_tmpfs", "us", 0.0, 1e7, False,
           "4 KiB random read latency p50 on tmpfs"),
    Metric("storage.randread_clat_p99_tmpfs", "us", 0.0, 1e7, False,
           "4 KiB random read latency p99 on tmpfs"),
    Metric("storage.randread_clat_p999_tmpfs", "us", 0.0, 1e7, False,
           "4 KiB random read latency p99.9 on tmpfs"),
    Metric("storage.randread_lat_mean_tmpfs", "us", 0.0, 1e7, False,
           "4 KiB random read latency mean on tmpfs"),
    Metric("storage.smallfile_read_tmpfs", "files/s", 0.0, 1e9, True,
           "small files via DataLoader on tmpfs"),
    # Kept for benchmarking the platform itself: a probe that measures nothing.
    Metric("noop.duration", "s", 0.0, 3_600.0, False, "no-op probe duration"),
]

METRICS: dict[str, Metric] = {m.name: m for m in _METRICS}


# A figure belongs to what was measured. These are of a link between two nodes (stored as
# link results, jobs.LinkResult); a multi-node job's training figures are of its node set
# (jobs.ClusterResult). Neither is ever a node's own board value.
LINK_METRICS = frozenset({"network.internode_throughput", "network.internode_rtt",
                          "network.internode_received"})
CLUSTER_FAMILY = "training"


def of_node(metric: str, node_count: int) -> bool:
    """Whether ``metric`` measured in a job of ``node_count`` nodes is a figure of one node."""
    if metric in LINK_METRICS:
        return False
    return node_count == 1 or not metric.startswith(f"{CLUSTER_FAMILY}.")


def family(prefix: str) -> tuple[str, ...]:
    """Every metric named ``prefix.*``: what the probe of that name may report."""
    return tuple(name for name in METRICS if name.startswith(f"{prefix}."))


def get(name: str) -> Metric:
    try:
        return METRICS[name]
    except KeyError:
        raise KeyError(f"unknown metric {name!r}") from None
