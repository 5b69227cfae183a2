"""The README's provider section, followed as a new user would: the installed `benchctl lab
up --spec tour` and `benchctl lab down`, run from outside the repository."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
from pathlib import Path

import pytest

from lab import cli as lab_cli
from lab import netlab
from lab.procs import wait_for

BENCHCTL = str(Path(sys.executable).with_name("benchctl"))


def leading(pid: int) -> bool:
    """The process is running (a zombie waiting for whoever adopted it to reap it is not)."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except FileNotFoundError:
        return False
    return stat.rsplit(")", 1)[1].split()[0] != "Z"


def running_in(groups: set[int]) -> list[str]:
    """The processes of these process groups still running (a zombie waiting for whoever
    adopted it to reap it is not running): each started process leads a group, and its own
    children (gunicorn's workers, Celery's pool, PostgreSQL's backends) are in it."""
    found = []
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            name, rest = stat.read_text().rsplit(")", 1)
        except (FileNotFoundError, ProcessLookupError):
            continue
        state, _ppid, pgrp = rest.split()[:3]
        if int(pgrp) in groups and state != "Z":
            found.append(f"{stat.parent.name} {name.split('(', 1)[1]}")
    return found


def env_without_database() -> dict[str, str]:
    # The lab makes its own database; the test run's DATABASE_URL is not for it.
    return {k: v for k, v in os.environ.items() if k != "DATABASE_URL"}


def test_an_unknown_spec_names_the_published_ones(tmp_path: Path) -> None:
    done = subprocess.run([BENCHCTL, "lab", "up", "--spec", "nosuch"], cwd=tmp_path,
                          capture_output=True, text=True, timeout=60, check=False)
    assert done.returncode != 0
    assert "no lab spec 'nosuch'" in done.stderr and "demo, tour" in done.stderr, done.stderr


@pytest.mark.slow
@pytest.mark.serial
@pytest.mark.skipif(os.geteuid() != 0, reason="the lab needs root (ip netns, tc)")
def test_the_installed_benchctl_brings_the_tour_lab_up_and_down_from_any_directory(
        tmp_path: Path) -> None:
    log = tmp_path / "lab-up.log"
    with open(log, "wb") as out:
        up = subprocess.Popen([BENCHCTL, "lab", "up", "--spec", "tour"], cwd=tmp_path,
                              stdout=out, stderr=subprocess.STDOUT, env=env_without_database(),
                              start_new_session=True)
    try:
        wait_for(lambda: "lab up; Ctrl-C" in log.read_text() or up.poll() is not None, 300,
                 "benchctl lab up")
        text = log.read_text()
        assert up.poll() is None, text[-3000:]
        assert "hz-a100-01" in text and "sz-h800-01" in text and "buyer token" in text, text
        assert any(ns.startswith(netlab.PREFIX) for ns in netlab.namespaces())
        # As after a crash: `lab up` killed with -9. Every process it started dies with it
        # (the parent-death signal); what those processes started themselves (Celery's pool
        # and beat, gunicorn's workers) and the namespaces are left for `lab down`.
        started = json.loads(lab_cli.STATE.read_text())["pids"]
        assert len(started) > 5, started
        os.killpg(up.pid, signal.SIGKILL)
        up.wait(30)
        wait_for(lambda: not any(leading(pid) for pid in started), 20,
                 "the processes `lab up` started to die with it")
        assert any(ns.startswith(netlab.PREFIX) for ns in netlab.namespaces())
        down = subprocess.run([BENCHCTL, "lab", "down"], cwd=tmp_path, capture_output=True,
                              text=True, timeout=120, check=False)
        assert down.returncode == 0, down.stderr
        # Every namespace of the tour lab, and nothing of the lab left running.
        assert "bl-tour-hz-a100-01" in down.stdout and "bl-tour-br" in down.stdout, down.stdout
        wait_for(lambda: not running_in(set(started)), 10, "the lab's last processes to go")
        wait_for(lambda: not any(ns.startswith(netlab.PREFIX) for ns in netlab.namespaces()),
                 10, "the tour lab's namespaces to go")
    finally:
        if up.poll() is None:
            os.killpg(up.pid, signal.SIGKILL)
        subprocess.run([BENCHCTL, "lab", "down"], cwd=tmp_path, capture_output=True,
                       timeout=120, check=False)
