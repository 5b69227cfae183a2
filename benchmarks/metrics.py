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


_METRICS = [
    Metric("network.icmp_rtt_avg", "ms", 0.0, 10_000.0, False, "ICMP RTT avg"),
    Metric("network.icmp_rtt_min", "ms", 0.0, 10_000.0, False, "ICMP RTT min"),
    Metric("network.icmp_rtt_max", "ms", 0.0, 10_000.0, False, "ICMP RTT max"),
    Metric("network.icmp_rtt_mdev", "ms", 0.0, 10_000.0, False, "ICMP RTT mdev (jitter)"),
    Metric("network.icmp_loss", "%", 0.0, 100.0, False, "ICMP loss"),
    # 1 stream, candidate -> peer; "_reverse" is peer -> candidate (iperf3 -R).
    Metric("network.tcp_throughput", "Gbit/s", 0.0, 1_000.0, True, "TCP throughput"),
    Metric("network.tcp_throughput_reverse", "Gbit/s", 0.0, 1_000.0, True,
           "TCP throughput (reverse)"),
    # What the peer's own iperf3 counted as received: measured by the peer, not the node.
    Metric("network.tcp_throughput_received", "Gbit/s", 0.0, 1_000.0, True,
           "TCP throughput seen by peer"),
    Metric("network.tcp_throughput_parallel", "Gbit/s", 0.0, 1_000.0, True,
           "TCP throughput, parallel streams"),
    Metric("network.hop_count", "count", 0.0, 255.0, False, "route hops (tracepath)"),
    # Node to node, within one multi-node job: this node towards each peer.
    Metric("network.internode_throughput", "Gbit/s", 0.0, 1_000.0, True,
           "inter-node TCP throughput"),
    Metric("network.internode_rtt", "ms", 0.0, 10_000.0, False, "inter-node RTT (ICMP avg)"),
    Metric("network.tcp_retransmits", "count", 0.0, 1e9, False, "TCP retransmits"),
    Metric("network.tcp_rtt", "ms", 0.0, 10_000.0, False, "TCP RTT (iperf3 sender mean)"),
    # Kept for benchmarking the platform itself: a probe that measures nothing.
    Metric("noop.duration", "s", 0.0, 3_600.0, False, "no-op probe duration"),
]

METRICS: dict[str, Metric] = {m.name: m for m in _METRICS}


def get(name: str) -> Metric:
    try:
        return METRICS[name]
    except KeyError:
        raise KeyError(f"unknown metric {name!r}") from None
