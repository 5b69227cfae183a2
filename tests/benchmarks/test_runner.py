"""The subprocess seam: timeouts kill the whole process group, probe limits cut commands."""

from __future__ import annotations

import subprocess
import time

import pytest

from benchmarks import runner
from lab.procs import wait_for


def pgrep(pattern: str) -> str:
    return subprocess.run(["pgrep", "-f", pattern], capture_output=True, text=True,
                          check=False).stdout


def test_a_timeout_kills_the_command_and_its_children() -> None:
    marker = "sleep 31.5"
    with pytest.raises(runner.CommandTimeout, match="timed out after 0.5 s"):
        runner.run(["sh", "-c", f"{marker} & {marker}; wait"], timeout=0.5)
    wait_for(lambda: pgrep(marker) == "", 5, "the command's children to die")


def test_a_probe_time_limit_cuts_a_longer_command() -> None:
    started = time.monotonic()
    with runner.time_limit(0.5), pytest.raises(runner.ProbeTimeLimit, match="timed out after 0.5 s"):
        runner.run(["sleep", "30"], timeout=60)
    assert time.monotonic() - started < 5


def test_a_missing_tool_says_so() -> None:
    with pytest.raises(runner.CommandNotFound, match="not installed"):
        runner.run(["no-such-tool-here"], timeout=5)


def test_output_comes_back_whatever_the_exit_status() -> None:
    result = runner.run(["sh", "-c", "echo out; echo err >&2; exit 3"], timeout=5)
    assert (result.returncode, result.stdout, result.stderr) == (3, "out\n", "err\n")


def test_a_command_dies_with_the_process_that_ran_it() -> None:
    import sys

    marker = "sleep 41.25"
    parent = subprocess.Popen([sys.executable, "-c",
                               "from benchmarks import runner; "
                               f"runner.run(['sh', '-c', 'exec {marker}'], timeout=60)"],
                              cwd=str(__import__("lab.procs").procs.REPO))
    deadline = time.monotonic() + 10
    while marker not in pgrep(marker + "$") and time.monotonic() < deadline:
        time.sleep(0.1)
    assert pgrep(marker) != ""
    parent.kill()  # SIGKILL: no cleanup code runs in the parent
    parent.wait()
    wait_for(lambda: pgrep(marker) == "", 5, "the command to die with its parent")


def test_python_steps_are_held_to_the_probe_time_limit_too() -> None:
    with runner.time_limit(0.2):
        runner.check_time_limit()  # not yet
        time.sleep(0.3)
        with pytest.raises(runner.ProbeTimeLimit, match="timed out after 0.2 s"):
            runner.check_time_limit()
