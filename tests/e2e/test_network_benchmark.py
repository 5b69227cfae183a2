"""A benchmark request travels from the API through a node's own queue to real probes and back."""

from __future__ import annotations

import subprocess
from typing import Any

import pytest
import requests

from benchmarks.parsers.iperf3 import parse_iperf3
from benchmarks.parsers.ping import parse_ping
from lab.procs import wait_for
from tests.fixtures import api_get

# Loopback throughput is bounded by the CPU, not by a link: next to other tests on a two-core
# machine the same path read 25.7 Gbit/s directly and 6.4 Gbit/s during the run a minute
# before. Measured alone, as the other tests that compare timings are.
pytestmark = [pytest.mark.slow, pytest.mark.serial]


def wait_job(url: str, buyer: Any, timeout: float = 60) -> dict[str, Any]:
    job: dict[str, Any] = {}

    def finished() -> bool:
        job.update(api_get(url, buyer))
        return job["status"] not in ("queued", "running")

    wait_for(finished, timeout, "the job to finish", interval=0.3)
    return job


def direct_gbps(port: int) -> float:
    """The same tool, run directly by the test on the same loopback path."""
    result = parse_iperf3(subprocess.run(
        ["iperf3", "-J", "-c", "127.0.0.1", "-p", str(port), "-t", "1"],
        capture_output=True, text=True, timeout=30, check=False).stdout)
    return result.sender_bps / 1e9


def test_a_network_benchmark_runs_on_the_node_and_matches_direct_measurements(
        live_server: Any, buyer: Any, enrol_node: Any, reference_endpoint: Any,
        worker_factory: Any, iperf3_port: int) -> None:
    # Before and after the run: what the path gives while the run measures it lies between.
    direct = [direct_gbps(iperf3_port)]
    node = enrol_node("hz-1", api_url=live_server.url)
    worker_factory(node.config_path, "worker-hz-1")

    response = requests.post(f"{live_server.url}/api/v1/benchmarks", headers=buyer.headers,
                             json={"nodes": [node.node.pk], "suite": "network",
                                   "profile": "quick"}, timeout=10)
    assert response.status_code == 202, response.text
    job = wait_job(response.json()["url"], buyer)

    run = job["runs"][0]
    assert run["status"] == "succeeded", run["error"]
    figures = {s["metric"]: s for s in run["samples"]}
    stored_gbps = figures["network.tcp_throughput"]["value"]
    stored_rtt = figures["network.icmp_rtt_avg"]["value"]
    assert figures["network.tcp_throughput"]["n"] >= 2  # more while the CV stays high
    # Repeated to the quick profile's stated precision (+/- 5%), 3 to 6 times: a figure that
    # stopped short of 6 reached it; one that did not says noisy, with the interval it reached.
    throughput = figures["network.tcp_throughput"]
    low, high = throughput["metadata"]["interval"]
    assert throughput["metadata"]["precision"] == 0.05 and 3 <= throughput["n"] <= 6
    reached = high - stored_gbps <= 0.05 * stored_gbps * (1 + 1e-4)  # 6 digits kept
    assert throughput["metadata"].get("noisy", False) is (not reached)
    assert reached or throughput["n"] == 6
    assert low <= stored_gbps <= high
    assert figures["network.hop_count"]["value"] == 1  # loopback: the peer is the first hop
    assert figures["network.tcp_throughput_parallel"]["metadata"]["streams"] == 4
    assert figures["network.icmp_loss"]["value"] == 0

    direct.append(direct_gbps(iperf3_port))
    ping = parse_ping(subprocess.run(["ping", "-n", "-c", "5", "-i", "0.2", "127.0.0.1"],
                                     capture_output=True, text=True, timeout=30, check=False).stdout)
    assert min(direct) / 2 <= stored_gbps <= max(direct) * 2, direct
    assert stored_rtt < 1.0 and ping.rtt_avg_ms is not None and ping.rtt_avg_ms < 1.0

    # The reference's own iperf3 log has every test: the figure is the platform's.
    assert figures["network.tcp_throughput"]["evidence"] == "platform-verified"
    assert figures["network.tcp_rtt"]["evidence"] == "platform-verified"
    board = api_get(f"{live_server.url}/api/v1/leaderboard?metric=network.tcp_throughput"
                    "&region=zhejiang", buyer)
    assert [row["node"]["name"] for row in board["results"]] == ["hz-1"]
    assert board["results"][0]["value"] == stored_gbps
    assert board["results"][0]["evidence"] == "platform-verified"
