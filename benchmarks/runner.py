"""The one seam through which probes run commands.

Each command runs in its own process group with a timeout; on timeout (or when the
caller is interrupted) the whole group is killed, so a probe leaves no orphan iperf3/fio.
"""

from __future__ import annotations

import ctypes
import os
import signal
import subprocess
import time
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass


class CommandTimeout(Exception):
    def __init__(self, argv: Sequence[str], timeout: float) -> None:
        super().__init__(f"{argv[0]} timed out after {timeout:g} s")
        self.argv = list(argv)
        self.timeout = timeout


class ProbeTimeLimit(Exception):
    """The probe's own time limit ran out while one of its commands was running."""

    def __init__(self, limit: float) -> None:
        super().__init__(f"timed out after {limit:g} s")
        self.limit = limit


# The current probe's deadline: no command may outlive it (see time_limit()).
_deadline: tuple[float, float] | None = None  # (monotonic deadline, the limit in seconds)


@contextmanager
def time_limit(seconds: float) -> Iterator[None]:
    """Every command run inside is killed, with its process group, when ``seconds`` pass."""
    global _deadline
    previous = _deadline
    _deadline = (time.monotonic() + seconds, seconds)
    try:
        yield
    finally:
        _deadline = previous


def extend_time_limit(seconds: float) -> None:
    """Move the current probe's deadline by ``seconds``: time it spent waiting its turn at
    a shared resource (a reference endpoint) is not time it ran."""
    global _deadline
    if _deadline is not None and seconds > 0:
        _deadline = (_deadline[0] + seconds, _deadline[1])


def check_time_limit() -> None:
    """Raise ProbeTimeLimit when the current probe's time limit has passed."""
    if _deadline is not None and time.monotonic() >= _deadline[0]:
        raise ProbeTimeLimit(_deadline[1])


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


PR_SET_PDEATHSIG = 1


def die_with_parent() -> None:
    """In the child before exec: be killed when the worker dies, even by kill -9.

    The command has its own process group (so a timeout can kill it whole), which takes
    it out of the worker's group; the parent-death signal brings it back under the worker.
    """
    try:
        libc = ctypes.CDLL(None, use_errno=True)
        libc.prctl(PR_SET_PDEATHSIG, signal.SIGKILL)
    except (OSError, AttributeError):
        return  # not Linux: the timeout still kills the group
    if os.getppid() == 1:  # the parent died before prctl took effect
        os._exit(1)


def run(argv: Sequence[str], timeout: float, env: dict[str, str] | None = None,
        stdin: str | None = None) -> CommandResult:
    """Run ``argv`` (with ``stdin`` as its input, if given); return its output whatever the
    exit status; raise on timeout."""
    limited_by_probe = False
    if _deadline is not None:
        left = _deadline[0] - time.monotonic()
        if left <= 0:
            raise ProbeTimeLimit(_deadline[1])
        if left < timeout:
            timeout, limited_by_probe = left, True
    try:
        proc = subprocess.Popen(
            list(argv), stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
            stdin=None if stdin is None else subprocess.PIPE,
            start_new_session=True, env=env, preexec_fn=die_with_parent,  # noqa: PLW1509
        )
    except FileNotFoundError:
        raise CommandNotFound(argv[0]) from None
    try:
        stdout, stderr = proc.communicate(stdin, timeout=timeout)
    except subprocess.TimeoutExpired:
        kill_group(proc)
        if limited_by_probe and _deadline is not None:
            raise ProbeTimeLimit(_deadline[1]) from None
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
