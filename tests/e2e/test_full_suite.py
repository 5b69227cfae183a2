"""The full suite in the quick profile, through the platform: every probe's samples arrive."""

from __future__ import annotations

import os
import time
from typing import Any

import pytest
import requests
import torch

from contract.metrics import METRICS
from tests.e2e.test_network_benchmark import wait_job

# Beside the parallel part, after the demo (`make test`): its two to three minutes there were
# the parallel part's longest test, and the demo ends a few minutes before the parallel part
# does. Nothing it checks is a bound that a busy machine moves.
pytestmark = [pytest.mark.slow, pytest.mark.beside]

# Measured only where there is an NVIDIA GPU, or where there is a second node.
NOT_HERE = {"training.gpu_util_mean", "training.gpu_util_p5", "training.gpu_util_below80",
            "training.gpu_power_mean", "network.internode_throughput", "network.internode_rtt",
            "network.internode_received", "noop.duration"}


def test_the_quick_full_suite_reports_every_probe(live_server: Any, buyer: Any, enrol_node: Any,
                                                  reference_endpoint: Any,
                                                  worker_factory: Any) -> None:
    node = enrol_node("hz-1", api_url=live_server.url)
    worker_factory(node.config_path, "w-full")
    started = time.monotonic()
    response = requests.post(f"{live_server.url}/api/v1/benchmarks", headers=buyer.headers,
                             json={"nodes": [node.node.pk], "suite": "full", "profile": "quick"},
                             timeout=10)
    assert response.status_code == 202, response.text
    job = wait_job(response.json()["url"], buyer, timeout=400)
    elapsed = time.monotonic() - started
    run = job["runs"][0]
    assert run["status"] == "succeeded", run["error"]
    reported = {s["metric"] for s in run["samples"]}
    print(f"\nquick full suite: {elapsed:.0f} s, {len(run['samples'])} samples")
    assert set(METRICS) - NOT_HERE - reported == set()
    gpu = next(s for s in run["samples"] if s["metric"] == "gpu.matmul_tflops_fp32")
    if torch.cuda.is_available():  # measured on the GPU, which the sample names
        assert gpu["metadata"]["device"] == "cuda" and gpu["metadata"]["device_name"]
    else:  # measured on the CPU, and the sample says why
        assert gpu["metadata"]["gpu"] == "skipped: no NVIDIA GPU"
    assert run["node"]["name"] == "hz-1"
    # Each figure keeps what else the host's CPUs did during its probe (#32 item 1), read from
    # the kernel before and after it: shares of the time, and the load at its end.
    for sample in run["samples"]:
        found = sample["metadata"]["conditions"]
        assert set(found) == {"cpu_busy", "cpu_iowait", "cpu_steal", "load1", "cpus"}, sample
        assert 0 < found["cpu_busy"] <= 1 and 0 <= found["cpu_steal"] < 1, found
        assert found["cpus"] == os.cpu_count()
