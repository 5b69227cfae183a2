"""The slow disk's mechanism (lab/blkio.py): a blkio group that takes a process and its
children, and goes with them back where they were; and a clear refusal where the kernel
has no throttling to give."""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from lab import blkio

THROTTLING = (blkio.ROOT / blkio.THROTTLES[0]).exists() and os.geteuid() == 0


def test_a_kernel_without_blkio_is_named_as_what_is_missing(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(blkio, "ROOT", tmp_path / "blkio")
    with pytest.raises(blkio.BlkioError, match="cgroup v1's blkio controller"):
        blkio.require()
    (tmp_path / "blkio").mkdir()
    (tmp_path / "blkio" / "blkio.throttle.read_iops_device").touch()
    with pytest.raises(blkio.BlkioError, match="no blkio.throttle.write_iops_device"):
        blkio.require()


def test_a_directory_on_no_block_device_cannot_be_throttled() -> None:
    if not Path("/dev/shm").is_dir():
        pytest.skip("no /dev/shm here")
    with pytest.raises(blkio.BlkioError, match="on no block device"):
        blkio.device_of(Path("/dev/shm/benchctl-data"))


@pytest.fixture
def parent_and_child() -> Iterator[subprocess.Popen[bytes]]:
    """A process with a child of its own, both asleep."""
    code = "import subprocess, sys, time; subprocess.Popen(['sleep', '60']); time.sleep(60)"
    proc = subprocess.Popen([sys.executable, "-c", code])
    yield proc
    for pid in [proc.pid, *blkio.children(proc.pid)]:
        try:
            os.kill(pid, 9)
        except ProcessLookupError:
            pass
    proc.wait()


@pytest.mark.skipif(not THROTTLING, reason="needs root and cgroup v1 blkio throttling")
def test_a_group_takes_a_process_with_its_children_and_gives_them_back(
        parent_and_child: subprocess.Popen[bytes]) -> None:
    from lab.procs import wait_for

    pid = parent_and_child.pid
    wait_for(lambda: bool(blkio.children(pid)), 10, "the child")
    before = blkio.group_of(pid)
    device = blkio.device_of(Path("/tmp"))  # noqa: S108 (only stat'ed)
    group = blkio.throttle(f"bench-lab-test-{os.getpid()}", pid, device, 1234)
    try:
        (child,) = blkio.children(pid)
        inside = {int(p) for p in (group / "cgroup.procs").read_text().split()}
        assert inside == {pid, child}
        assert (group / "blkio.throttle.read_iops_device").read_text().split() == [device, "1234"]
    finally:
        blkio.release(group)
    assert not group.exists()
    assert blkio.group_of(pid) == before and blkio.group_of(child) == before
    blkio.release(group)  # a second clear is a no-op
