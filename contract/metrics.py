"""The metrics a probe may report: unit, plausible range, and which way is better.

Shared by both sides: probes name their samples from here, and the platform validates
what an (untrusted) host posts against the same table.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, replace
from typing import Any


def gettext_noop(text: str) -> str:
    """Marks a label for the web's catalogue (makemessages finds it by this name). Hosts
    share this table and need no translations; the platform translates when it shows one."""
    return text


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
    about: str = ""  # one line for a buyer: what it measures and why it matters (ABOUT)


_METRICS = [
    Metric("network.icmp_rtt_avg", "ms", 0.0, 10_000.0, False, gettext_noop("ICMP RTT avg"), mean=True),
    Metric("network.icmp_rtt_min", "ms", 0.0, 10_000.0, False, gettext_noop("ICMP RTT min")),
    Metric("network.icmp_rtt_max", "ms", 0.0, 10_000.0, False, gettext_noop("ICMP RTT max")),
    Metric("network.icmp_rtt_mdev", "ms", 0.0, 10_000.0, False, gettext_noop("ICMP RTT mdev (jitter)")),
    Metric("network.icmp_loss", "%", 0.0, 100.0, False, gettext_noop("ICMP loss")),
    # 1 stream, candidate -> peer, as the receiving peer's iperf3 counted it (goodput:
    # what arrived); "_sent" is the candidate's own count of what it sent; "_reverse" is
    # peer -> candidate (iperf3 -R), counted by the candidate as receiver.
    Metric("network.tcp_throughput", "Gbit/s", 0.0, 1_000.0, True, gettext_noop("TCP throughput"),
           verifiable=True),
    Metric("network.tcp_throughput_sent", "Gbit/s", 0.0, 1_000.0, True,
           gettext_noop("TCP throughput (sender's count)")),
    Metric("network.tcp_throughput_reverse", "Gbit/s", 0.0, 1_000.0, True,
           gettext_noop("TCP throughput (reverse)"), verifiable=True),
    Metric("network.tcp_throughput_parallel", "Gbit/s", 0.0, 1_000.0, True,
           gettext_noop("TCP throughput, parallel streams"), verifiable=True),
    Metric("network.hop_count", "count", 0.0, 255.0, False, gettext_noop("route hops (tracepath)")),
    # Node to node, within one multi-node job: this node towards each peer.
    Metric("network.internode_throughput", "Gbit/s", 0.0, 1_000.0, True,
           gettext_noop("inter-node TCP throughput")),
    Metric("network.internode_rtt", "ms", 0.0, 10_000.0, False, gettext_noop("inter-node RTT (TCP median)")),
    # The receiving node's own iperf3 server log of the tests its peers sent it (each
    # test's cookie and count in the metadata): the other end's view of the same links.
    Metric("network.internode_received", "Gbit/s", 0.0, 1_000.0, True,
           gettext_noop("inter-node TCP throughput, as the receiver counted it")),
    Metric("network.tcp_retransmits", "count", 0.0, 1e9, False, gettext_noop("TCP retransmits")),
    # Round trips of one byte over an open TCP connection to the peer's echo server.
    Metric("network.tcp_rtt", "ms", 0.0, 10_000.0, False, gettext_noop("TCP RTT (echo)"), verifiable=True),
    # The sender's smoothed RTT during the iperf3 test: RTT under load (queueing included).
    Metric("network.tcp_rtt_loaded", "ms", 0.0, 10_000.0, False, gettext_noop("TCP RTT under load (iperf3)")),
    Metric("training.step_time", "ms", 0.0, 1e7, False, gettext_noop("DDP step time (median)")),
    Metric("training.step_time_p95", "ms", 0.0, 1e7, False, gettext_noop("DDP step time p95")),
    Metric("training.samples_per_s", "samples/s", 0.0, 1e9, True, gettext_noop("DDP training throughput")),
    # The same steps under ddp.no_sync(): forward, backward and optimizer without all-reduce.
    Metric("training.compute_time", "ms", 0.0, 1e7, False, gettext_noop("DDP step compute time (no sync)")),
    Metric("training.comm_share", "ratio", 0.0, 1.0, False,
           gettext_noop("Share of step time in gradient sync")),
    Metric("training.comm_share_accum4", "ratio", 0.0, 1.0, False,
           gettext_noop("Gradient sync share, accumulation 4")),
    Metric("training.comm_share_accum8", "ratio", 0.0, 1.0, False,
           gettext_noop("Gradient sync share, accumulation 8")),
    # nccl-tests conventions: busbw = algbw * 2(n-1)/n.
    Metric("training.allreduce_busbw", "GB/s", 0.0, 100_000.0, True,
           gettext_noop("All-reduce bus bandwidth (peak)")),
    Metric("training.allreduce_busbw_largest", "GB/s", 0.0, 100_000.0, True,
           gettext_noop("All-reduce bus bandwidth (largest message)")),
    Metric("training.dataloader_samples_per_s", "samples/s", 0.0, 1e9, True,
           gettext_noop("DataLoader throughput (best settings)")),
    Metric("training.dataloader_gain", "ratio", 0.0, 10_000.0, True,
           gettext_noop("DataLoader speed-up over num_workers=0")),
    Metric("training.gpu_util_mean", "%", 0.0, 100.0, True, gettext_noop("GPU utilisation during DDP (mean)"),
           mean=True),
    Metric("training.gpu_util_p5", "%", 0.0, 100.0, True, gettext_noop("GPU utilisation during DDP (p5)")),
    Metric("training.gpu_util_below80", "ratio", 0.0, 1.0, False,
           gettext_noop("Share of time GPU under 80% busy")),
    Metric("training.gpu_power_mean", "W", 0.0, 10_000.0, False, gettext_noop("GPU power during DDP (mean)"),
           mean=True),
    Metric("gpu.matmul_tflops_fp32", "TFLOP/s", 0.0, 10_000.0, True, gettext_noop("Matmul fp32")),
    Metric("gpu.matmul_tflops_bf16", "TFLOP/s", 0.0, 100_000.0, True, gettext_noop("Matmul bf16")),
    # Read + write bytes per second, as CUDA's bandwidthTest counts device-to-device copies.
    Metric("gpu.memcpy_bw", "GB/s", 0.0, 100_000.0, True, gettext_noop("Device memory copy bandwidth")),
    Metric("storage.randread_iops", "IOPS", 0.0, 1e9, True, gettext_noop("4 KiB random read IOPS (fio)")),
    Metric("storage.randread_clat_p50", "us", 0.0, 1e7, False, gettext_noop("4 KiB random read latency p50")),
    Metric("storage.randread_clat_p99", "us", 0.0, 1e7, False, gettext_noop("4 KiB random read latency p99")),
    Metric("storage.randread_clat_p999", "us", 0.0, 1e7, False,
           gettext_noop("4 KiB random read latency p99.9")),
    # fio's mean total latency: with the IOPS and the jobs in flight, Little's law.
    Metric("storage.randread_lat_mean", "us", 0.0, 1e7, False,
           gettext_noop("4 KiB random read latency mean")),
    Metric("storage.seqread_bw", "GB/s", 0.0, 1_000.0, True, gettext_noop("1 MiB sequential read (fio)")),
    Metric("storage.seqwrite_bw", "GB/s", 0.0, 1_000.0, True, gettext_noop("1 MiB sequential write (fio)")),
    Metric("storage.checkpoint_write", "GB/s", 0.0, 1_000.0, True, gettext_noop("torch.save + fsync")),
    Metric("storage.checkpoint_read", "GB/s", 0.0, 1_000.0, True, gettext_noop("torch.load")),
    Metric("storage.smallfile_read", "files/s", 0.0, 1e9, True, gettext_noop("small files via DataLoader")),
    Metric("storage.packedfile_read", "files/s", 0.0, 1e9, True,
           gettext_noop("same records packed in one file via DataLoader")),
    Metric("storage.randread_iops_tmpfs", "IOPS", 0.0, 1e9, True,
           gettext_noop("4 KiB random read IOPS on tmpfs (fio)")),
    Metric("storage.randread_clat_p50_tmpfs", "us", 0.0, 1e7, False,
           gettext_noop("4 KiB random read latency p50 on tmpfs")),
    Metric("storage.randread_clat_p99_tmpfs", "us", 0.0, 1e7, False,
           gettext_noop("4 KiB random read latency p99 on tmpfs")),
    Metric("storage.randread_clat_p999_tmpfs", "us", 0.0, 1e7, False,
           gettext_noop("4 KiB random read latency p99.9 on tmpfs")),
    Metric("storage.randread_lat_mean_tmpfs", "us", 0.0, 1e7, False,
           gettext_noop("4 KiB random read latency mean on tmpfs")),
    Metric("storage.smallfile_read_tmpfs", "files/s", 0.0, 1e9, True,
           gettext_noop("small files via DataLoader on tmpfs")),
    # Kept for benchmarking the platform itself: a probe that measures nothing.
    Metric("noop.duration", "s", 0.0, 3_600.0, False, gettext_noop("no-op probe duration")),
]

# What a buyer reads beside a figure (translated on the pages).
ABOUT = {
    "network.tcp_throughput": gettext_noop(
        "What one TCP stream from the node reaches its region's reference endpoint, as the "
        "reference counted it: the data-loading and cross-node path."),
    "network.tcp_throughput_reverse": gettext_noop(
        "The same test in the other direction: from the reference to the node."),
    "network.tcp_throughput_parallel": gettext_noop(
        "Several TCP streams at once: what the link carries when one stream cannot fill it."),
    "network.tcp_throughput_sent": gettext_noop(
        "What the node says it sent; the reference's own count is the one that ranks."),
    "network.tcp_rtt": gettext_noop(
        "Round trip of one byte to the region's reference, timed by the reference's echo "
        "server: under 5 ms is good, over 10 ms slows every synchronisation."),
    "network.tcp_rtt_loaded": gettext_noop(
        "Round-trip time while the link is full: queueing on a shared path shows here."),
    "network.icmp_rtt_avg": gettext_noop("Ping round-trip time to the reference endpoint."),
    "network.icmp_loss": gettext_noop("Share of pings lost: any loss stalls TCP transfers."),
    "network.hop_count": gettext_noop("Routers between the node and the reference."),
    "network.tcp_retransmits": gettext_noop("TCP segments sent again during the test."),
    "training.step_time": gettext_noop(
        "Median time of one data-parallel training step (forward, backward, gradient sync)."),
    "training.samples_per_s": gettext_noop("Training samples processed per second by all ranks."),
    "training.compute_time": gettext_noop("The same step without gradient synchronisation."),
    "training.comm_share": gettext_noop(
        "Share of each step spent synchronising gradients: over 30% means the network, not "
        "the GPU, sets the pace."),
    "training.allreduce_busbw": gettext_noop(
        "All-reduce bus bandwidth (nccl-tests convention), the best message size: what "
        "gradient synchronisation can reach."),
    "training.allreduce_busbw_largest": gettext_noop(
        "All-reduce bus bandwidth at the largest message, the size of real gradient buckets."),
    "training.dataloader_samples_per_s": gettext_noop(
        "Samples per second the PyTorch DataLoader delivers with its best worker settings."),
    "training.dataloader_gain": gettext_noop(
        "How much faster several DataLoader workers read than one process."),
    "training.gpu_util_mean": gettext_noop("How busy the GPU was while training, on average."),
    "storage.randread_iops": gettext_noop(
        "Random 4 KiB reads per second (fio): a data set of many small files needs many."),
    "storage.randread_clat_p99": gettext_noop("Random reads finish within this time 99 times in 100."),
    "storage.seqread_bw": gettext_noop("Large sequential reads: streaming packed data sets."),
    "storage.seqwrite_bw": gettext_noop("Large sequential writes."),
    "storage.checkpoint_write": gettext_noop(
        "A model checkpoint saved with torch.save and flushed to disk: how long training "
        "pauses for each checkpoint."),
    "storage.checkpoint_read": gettext_noop("Loading a checkpoint back, to resume training."),
    "storage.smallfile_read": gettext_noop("Many small files read through a DataLoader."),
    "storage.packedfile_read": gettext_noop("The same records packed into one file."),
    "gpu.matmul_tflops_fp32": gettext_noop("Dense matrix multiply throughput in fp32."),
    "gpu.matmul_tflops_bf16": gettext_noop("Dense matrix multiply throughput in bf16."),
    "gpu.memcpy_bw": gettext_noop("GPU memory copy bandwidth."),
}
_METRICS = [replace(m, about=ABOUT.get(m.name, "")) for m in _METRICS]
METRICS: dict[str, Metric] = {m.name: m for m in _METRICS}

# The words among the units, translated where a unit is shown; symbols (ms, GB/s) stay.
UNIT_WORDS = {"count": gettext_noop("count"), "ratio": gettext_noop("ratio"),
              "samples/s": gettext_noop("samples/s"), "files/s": gettext_noop("files/s"),
              # Stored as fio writes it; shown as people write it (微秒 in Chinese).
              "us": gettext_noop("µs")}


def label(metric: str, gettext: Callable[[str], str]) -> str | None:
    """The metric's label in the reader's language (the web's gettext or benchctl's); None
    for a metric this table does not know."""
    known = METRICS.get(metric)
    return gettext(known.label) if known else None


def unit_word(symbol: str, gettext: Callable[[str], str]) -> str:
    """A unit as shown: symbols stay, the words among them are translated."""
    return gettext(UNIT_WORDS[symbol]) if symbol in UNIT_WORDS else symbol


# A figure belongs to what was measured. These are of a link between two nodes (stored as
# link results, board.LinkResult); a multi-node job's training figures are of its node set
# (board.ClusterResult). Neither is ever a node's own board value.
LINK_METRICS = frozenset({"network.internode_throughput", "network.internode_rtt",
                          "network.internode_received"})
CLUSTER_FAMILY = "training"
# The GPU probe's figures: a CPU's stand in for them on a host without a GPU (board.latest).
GPU_FAMILY = "gpu"


def of_node(metric: str, node_count: int) -> bool:
    """Whether ``metric`` measured in a job of ``node_count`` nodes is a figure of one node."""
    if metric in LINK_METRICS:
        return False
    return node_count == 1 or not metric.startswith(f"{CLUSTER_FAMILY}.")


def worst(samples: list[dict[str, Any]], higher_is_better: bool) -> dict[str, Any]:
    """Of one run's samples of one metric (one per reference peer), the one the run's figure
    is: with several peers, a node is as good as its worst."""
    return (min if higher_is_better else max)(samples, key=lambda s: s["value"])


def family(prefix: str) -> tuple[str, ...]:
    """Every metric named ``prefix.*``: what the probe of that name may report."""
    return tuple(name for name in METRICS if name.startswith(f"{prefix}."))


def get(name: str) -> Metric:
    try:
        return METRICS[name]
    except KeyError:
        raise KeyError(f"unknown metric {name!r}") from None
