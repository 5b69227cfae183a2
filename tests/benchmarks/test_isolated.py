"""A probe step in a child process: its result comes back, and a hung or failing step is
killed (with what it started) and reported, not left running in the worker."""

from __future__ import annotations

import os
import subprocess
import time
from pathlib import Path

import pytest

from benchmarks import runner
from benchmarks.probes import isolated
from benchmarks.probes.base import ProbeError
from tests.benchmarks.isolated_steps import GRANDCHILD

STEPS = "tests.benchmarks.isolated_steps"


def pgrep(pattern: str) -> str:
    return subprocess.run(["pgrep", "-f", pattern], capture_output=True, text=True,
                          check=False).stdout


def gone(pattern: str, within: float = 2.0) -> bool:
    # A killed process may take a moment to be reaped (a zombie's command line is empty).
    deadline = time.monotonic() + within
    while pgrep(pattern) and time.monotonic() < deadline:
        time.sleep(0.05)
    return pgrep(pattern) == ""


def test_the_step_runs_in_another_process_and_its_result_comes_back() -> None:
    config = {"n": 3, "name": "matmul", "sizes": [1, 2.5], "none": None}

    result = isolated.call(f"{STEPS}:echo", config, timeout=30, what="the echo step")

    assert result["config"] == config
    assert result["pid"] != os.getpid()


def test_a_hung_step_is_killed_with_what_it_started_when_the_probe_time_limit_ends(
    tmp_path: Path,
) -> None:
    started_file = tmp_path / "started"
    started = time.monotonic()
    with runner.time_limit(1.0), pytest.raises(runner.ProbeTimeLimit, match="timed out after 1 s"):
        isolated.call(f"{STEPS}:hang", {"started": str(started_file)}, timeout=60,
                      what="the hung step")
    elapsed = time.monotonic() - started

    assert started_file.read_text() == "started"  # it was hanging, not still starting
    assert elapsed < 3, elapsed
    assert gone(f"{STEPS}:hang")
    assert gone(GRANDCHILD)


def test_a_step_past_its_own_timeout_is_killed_and_named(tmp_path: Path) -> None:
    with pytest.raises(ProbeError, match=r"^the hung step timed out after 1 s; its processes "
                                         r"were killed$"):
        isolated.call(f"{STEPS}:hang", {"started": str(tmp_path / "started")}, timeout=1,
                      what="the hung step")

    assert gone(f"{STEPS}:hang")
    assert gone(GRANDCHILD)


def test_a_failing_step_reports_its_exit_status_and_stderr_tail() -> None:
    with pytest.raises(ProbeError) as failed:
        isolated.call(f"{STEPS}:crash", {}, timeout=30, what="the GPU measurement")

    message = str(failed.value)
    assert message.startswith("the GPU measurement failed (exit 1): ")
    assert "allocating 80 GiB on cuda:0" in message
    assert message.endswith("RuntimeError: CUDA error: an illegal memory access was encountered")


def test_a_probe_error_raised_in_the_step_keeps_its_own_message() -> None:
    with pytest.raises(ProbeError) as refused:
        isolated.call(f"{STEPS}:refuse", {}, timeout=30, what="the data loader reads")

    assert str(refused.value) == "the data loader returned 3 records, expected 4"
