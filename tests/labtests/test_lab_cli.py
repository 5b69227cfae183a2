"""The README's provider section, followed as a new user would: the installed `benchctl lab
up --spec tour` and `benchctl lab down`, run from outside the repository."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from lab import netlab
from lab.procs import wait_for

BENCHCTL = str(Path(sys.executable).with_name("benchctl"))


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
        # As after a crash: the processes are killed, then `lab down` removes what is left.
        os.killpg(up.pid, signal.SIGKILL)
        up.wait(30)
        assert any(ns.startswith(netlab.PREFIX) for ns in netlab.namespaces())
        down = subprocess.run([BENCHCTL, "lab", "down"], cwd=tmp_path, capture_output=True,
                              text=True, timeout=120, check=False)
        assert down.returncode == 0, down.stderr
        # The processes `lab up` recorded and every namespace of the tour lab.
        assert "removed: process group " in down.stdout, down.stdout
        assert "bl-tour-hz-a100-01" in down.stdout and "bl-tour-br" in down.stdout, down.stdout
        time.sleep(0.5)
        assert not any(ns.startswith(netlab.PREFIX) for ns in netlab.namespaces())
    finally:
        if up.poll() is None:
            os.killpg(up.pid, signal.SIGKILL)
        subprocess.run([BENCHCTL, "lab", "down"], cwd=tmp_path, capture_output=True,
                       timeout=120, check=False)
