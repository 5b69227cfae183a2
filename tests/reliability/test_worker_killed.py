"""kill -9 of a node worker's process group in the middle of iperf3: no orphan, run once."""

from __future__ import annotations

import subprocess
import time
from typing import Any

import pytest

from jobs.models import Run, Sample
from jobs.services import submission
from lab.procs import wait_for

# It counts every iperf3 client on the machine: alone, not beside another test's probes.
pytestmark = [pytest.mark.slow, pytest.mark.serial]

# One-second tests: the kill lands in one of six back to back, and the redone run is short.
NETWORK = {"iperf3_duration": 1, "iperf3_omit": 0, "repetitions": 2, "max_repetitions": 2,
           "ping_count": 3}


def iperf3_clients() -> str:
    return subprocess.run(["pgrep", "-af", "iperf3 -J -c"], capture_output=True, text=True,
                          check=False).stdout


def test_a_run_killed_mid_probe_is_redone_once_and_leaves_no_orphans(
        live_server: Any, buyer: Any, enrol_node: Any, reference_endpoint: Any,
        worker_factory: Any) -> None:
    one = enrol_node("hz-1", api_url=live_server.url)
    worker = worker_factory(one.config_path, "w-mid-iperf3")
    job, _ = submission.submit(buyer.user, [one.node.pk], "network", NETWORK)
    run = job.runs.get()
    wait_for(lambda: iperf3_clients() != "", 30, "iperf3 to be running")

    worker.kill()  # SIGKILL to the worker's whole process group
    killed = time.monotonic()
    wait_for(lambda: iperf3_clients() == "", 5, "no iperf3 client left")
    worker_factory(one.config_path, "w-mid-iperf3-again")
    wait_for(lambda: Run.objects.get(pk=run.pk).status == "succeeded", 120, "the run to finish")
    print(f"\nrun finished {time.monotonic() - killed:.1f} s after kill -9 "
          f"(attempts: {Run.objects.get(pk=run.pk).attempts})")

    assert Run.objects.get(pk=run.pk).attempts == 2
    assert Sample.objects.filter(run=run, metric="network.tcp_throughput").count() == 1
