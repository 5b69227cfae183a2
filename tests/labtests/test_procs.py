"""What the lab, the demo and the tests start dies with the process that started it."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from lab import procs


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
