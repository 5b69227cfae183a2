"""What the lab, the demo and the tests start dies with the process that started it."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from lab import procs
from lab.relay import REALTIME_PRIORITY as RELAY_PRIORITY


def running(marker: str) -> list[str]:
    found = subprocess.run(["pgrep", "-af", "--", marker], capture_output=True, text=True, check=False)
    return [line for line in found.stdout.splitlines() if "pgrep" not in line]


def test_a_killed_starter_leaves_neither_its_servers_nor_their_restart_loops(
        tmp_path: Path) -> None:
    # A killed test run, demo or `benchctl lab up`: its iperf3 server (in the restart loop a
    # reference runs it in) and a plain process must not outlive it.
    port = procs.free_port()
    ready = tmp_path / "ready"
    starter = subprocess.Popen([sys.executable, "-c", f"""
import time
from pathlib import Path
from lab import procs
log = Path({str(tmp_path)!r})
procs.start_iperf3_server({port}, log, report_log=log / "iperf3.json")
procs.start("sleeper", ["sleep", "41.75"], log)
Path({str(ready)!r}).touch()
time.sleep(600)
"""], cwd=procs.REPO)
    try:
        procs.wait_for(ready.exists, 30, "the starter's servers")
        assert running(f"-p {port}") and running("sleep 41.75")
    finally:
        starter.kill()  # SIGKILL: no cleanup code of the starter runs
        starter.wait()
    procs.wait_for(lambda: not running(f"-p {port}") and not running("sleep 41.75"), 10,
                   "the starter's processes to die with it")


@pytest.mark.skipif(not procs.realtime_allowed(), reason="real-time priority needs root with "
                    "CAP_SYS_NICE")
def test_a_reference_s_round_trips_are_timed_above_the_lab_s_relays(tmp_path: Path) -> None:
    """The echo server and the side that answers it run at real-time priority above the
    relays' (lab.relay.realtime): a relay carrying a link's traffic takes a core, and a
    round trip timed by a process waiting behind it is the wait, not the path."""
    proc = procs.start_echo_server(procs.free_port(), tmp_path)
    try:
        assert os.sched_getscheduler(proc.popen.pid) == os.SCHED_FIFO
        assert os.sched_getparam(proc.popen.pid).sched_priority == procs.ECHO_REALTIME_PRIORITY \
            > RELAY_PRIORITY
    finally:
        proc.stop()
    answer = procs.answer_echo_argv("127.0.0.1", 1, 1, "t")
    assert answer[:3] == ["chrt", "-f", str(procs.ECHO_REALTIME_PRIORITY)]
    assert procs.answer_echo_argv("127.0.0.1", 1, 1, "t", raised=False)[0] == "env"
