"""One lab host's disk made slow: its processes in a blkio cgroup (cgroup v1), throttled.

Every lab host shares the machine's one disk, so a slow disk cannot be a slower device:
it is a throttle on the I/O of the host's processes alone. cgroup v1's blkio controller
caps, per group and per device, the read and write operations a second
(``blkio.throttle.{read,write}_iops_device``); the other hosts keep the real disk. The
throttle counts what reaches the block device: O_DIRECT I/O (fio's in the storage probe,
``--direct=1``) and page-cache misses, not buffered writes (written back later by the
kernel's flusher, outside the group).

A new child stays in its parent's group, so the host's node worker moved into the group
takes the probes it starts (fio and its per-job processes) with it. Moving a parent
before listing its children leaves no gap: a child forked after the move is born inside.
"""

from __future__ import annotations

import errno
import os
import time
from pathlib import Path

ROOT = Path("/sys/fs/cgroup/blkio")
THROTTLES = ("blkio.throttle.read_iops_device", "blkio.throttle.write_iops_device")


class BlkioError(RuntimeError):
    pass


def require() -> None:
    """Raise, naming what is missing, unless cgroup v1's blkio throttling is writable here."""
    if not ROOT.is_dir():
        raise BlkioError(f"a slow disk needs cgroup v1's blkio controller mounted at {ROOT} "
                         "(this kernel has none there: a cgroup v2-only host would need io.max, "
                         "which the lab does not drive)")
    missing = [name for name in THROTTLES if not (ROOT / name).exists()]
    if missing:
        raise BlkioError(f"a slow disk needs blkio throttling (CONFIG_BLK_DEV_THROTTLING): "
                         f"{ROOT} has no {', '.join(missing)}")
    if not os.access(ROOT, os.W_OK):
        raise BlkioError(f"a slow disk needs to make a cgroup under {ROOT}: not writable "
                         "(run the lab as root, with /sys/fs/cgroup mounted read-write)")


def device_of(path: Path) -> str:
    """The whole disk (MAJOR:MINOR) under ``path``, or its nearest existing parent: blkio
    throttles whole disks only, so a partition's number is its disk's."""
    while not path.exists():
        path = path.parent
    dev = os.stat(path).st_dev
    block = Path("/sys/dev/block") / f"{os.major(dev)}:{os.minor(dev)}"
    if not block.exists():
        raise BlkioError(f"{path} is on no block device (device {os.major(dev)}:"
                         f"{os.minor(dev)}: tmpfs, overlay or a network file system): a blkio "
                         "throttle cannot slow it")
    disk = block.resolve()
    if (disk / "partition").exists():
        disk = disk.parent
    return (disk / "dev").read_text().strip()


def group_of(pid: int) -> Path:
    """The blkio group ``pid`` is in (its directory under ROOT)."""
    for line in Path(f"/proc/{pid}/cgroup").read_text().splitlines():
        _id, controllers, path = line.split(":", 2)
        if "blkio" in controllers.split(","):
            return ROOT / path.lstrip("/")
    raise BlkioError(f"process {pid} is in no blkio cgroup (no cgroup v1 blkio hierarchy)")


def children(pid: int) -> list[int]:
    found: list[int] = []
    for task in Path(f"/proc/{pid}/task").glob("*"):
        try:
            found += [int(c) for c in (task / "children").read_text().split()]
        except OSError:  # the thread or the process ended meanwhile
            continue
    return found


def move(pid: int, group: Path) -> bool:
    """``pid`` (all its threads) into ``group``; False when it has ended."""
    try:
        (group / "cgroup.procs").write_text(f"{pid}\n")
    except OSError as exc:
        if exc.errno == errno.ESRCH:
            return False
        raise
    return True


def throttle(name: str, pid: int, device: str, iops: int) -> Path:
    """A group ``name`` beside ``pid``'s own, capped at ``iops`` reads and ``iops`` writes a
    second on ``device``, with ``pid`` and all its descendants in it; returns the group."""
    require()
    group = group_of(pid) / name
    group.mkdir(exist_ok=True)
    for limit in THROTTLES:
        (group / limit).write_text(f"{device} {iops}\n")
    pending = [pid]
    while pending:  # a parent before its children (see the module's docstring)
        here = pending.pop()
        if move(here, group):
            pending += children(here)
    return group


def release(group: Path) -> None:
    """Every process of ``group`` back in the group above it, and the group removed."""
    if not group.is_dir():
        return
    for _ in range(100):
        try:
            pids = [int(p) for p in (group / "cgroup.procs").read_text().split()]
        except FileNotFoundError:
            return
        for pid in pids:
            move(pid, group.parent)
        try:
            group.rmdir()
            return
        except OSError as exc:  # a child forked while we moved: move it too
            if exc.errno != errno.EBUSY:
                raise
        time.sleep(0.05)
    raise BlkioError(f"{group} keeps processes: it could not be removed")
