"""The one seam through which probes run commands.

Each command runs in its own process group with a timeout; on timeout (or when the
caller is interrupted) the whole group is killed, so a probe leaves no orphan iperf3/fio.
"""

from __future__ import annotations

import os
import signal
import subprocess
from collections.abc import Sequence
from dataclasses import dataclass


class CommandTimeout(Exception):
    def __init__(self, argv: Sequence[str], timeout: float) -> None:
        super().__init__(f"{argv[0]} timed out after {timeout:g} s")
        self.argv = list(argv)
        self.timeout = timeout


class CommandNotFound(Exception):
    def __init__(self, program: str) -> None:
        super().__init__(f"{program} is not installed on this host")
        self.program = program


@dataclass(frozen=True)
class CommandResult:
    argv: list[str]
    returncode: int
    stdout: str
    stderr: str


def run(argv: Sequence[str], timeout: float, env: dict[str, str] | None = None) -> CommandResult:
    """Run ``argv``; return its output whatever the exit status; raise on timeout."""
    try:
        proc = subprocess.Popen(
            list(argv), stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
            start_new_session=True, env=env,
        )
    except FileNotFoundError:
        raise CommandNotFound(argv[0]) from None
    try:
        stdout, stderr = proc.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        kill_group(proc)
        raise CommandTimeout(argv, timeout) from None
    except BaseException:
        kill_group(proc)
        raise
    return CommandResult(list(argv), proc.returncode, stdout, stderr)


def kill_group(proc: subprocess.Popen[str]) -> None:
    try:
        os.killpg(proc.pid, signal.SIGKILL)
    except ProcessLookupError:
        pass
    proc.communicate()
