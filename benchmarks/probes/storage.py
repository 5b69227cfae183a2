"""Storage probe: fio random/sequential I/O, checkpoint save/load, small-file dataset reads.

Everything runs in a per-run subdirectory of ``$BENCH_DATA_DIR`` (default
``<tempdir>/benchctl-data``): the directory a training job would keep its data and
checkpoints in, which is not necessarily the root file system. The random-read and
small-file figures are repeated on tmpfs (``/dev/shm``) as a memory-speed reference,
so a slow data directory can be told from a slow host.

This module is the probe: its data directories, and the order of its steps. The steps are
in storage_fio, storage_checkpoint and storage_dataset; the torch ones run in a child
process (benchmarks.probes.isolated), held to the probe's time limit.
"""

from __future__ import annotations

import os
import shutil
import tempfile
from collections.abc import Callable
from pathlib import Path
from typing import Any

from benchmarks.probes.base import Probe, ProbeError
from benchmarks.probes.storage_checkpoint import checkpoint_samples
from benchmarks.probes.storage_dataset import dataset_samples
from benchmarks.probes.storage_fio import FioPlan, fio_samples
from contract import metrics
from contract.sample import Sample

DATA_DIR_ENV = "BENCH_DATA_DIR"
# Only ever used through mkdtemp, so a shared world-writable directory is safe.
TMPFS_DIR = Path("/dev/shm")  # noqa: S108
MIB = 1024 * 1024
# Room left free on the file system beyond what the probe itself writes.
SPACE_MARGIN_BYTES = 64 * MIB


class StorageProbe(Probe):
    name = "storage"
    produces = metrics.family("storage")

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self._data_root: Path | None = None
        self._created_root = False
        self._data_dir: Path | None = None
        self._tmpfs_dir: Path | None = None
        self._tmpfs_skipped: str | None = None

    # -- contract -------------------------------------------------------------------------

    def prepare(self) -> None:
        if shutil.which("fio") is None:
            raise ProbeError("fio is not installed; install it (apt-get install fio)")
        root, from_env = data_root()
        if ":" in str(root):
            # fio splits --directory on ':' (several directories in one option).
            raise ProbeError(f"{DATA_DIR_ENV}={root} contains ':', which fio cannot take")
        if from_env and not root.is_dir():
            # A mistyped mount point must not silently benchmark the root file system.
            raise ProbeError(f"{DATA_DIR_ENV}={root} is not a directory; create it or fix the path")
        if not from_env and not root.exists():
            try:
                root.mkdir(parents=True)
            except OSError as exc:
                raise ProbeError(f"cannot create the data directory {root}: {exc}") from None
            self._created_root = True
        self._data_root = root
        try:
            self._data_dir = Path(tempfile.mkdtemp(prefix="benchctl-storage-", dir=root))
        except OSError as exc:
            raise ProbeError(f"the data directory {root} is not writable: {exc}; set "
                             f"{DATA_DIR_ENV} to a writable directory") from None
        need = self._data_bytes()
        free = shutil.disk_usage(self._data_dir).free
        if free < need + SPACE_MARGIN_BYTES:
            # Whoever runs probes may skip cleanup() when prepare() fails: tidy up here.
            self.cleanup()
            raise ProbeError(f"{root} has {free / MIB:.0f} MiB free; the storage probe needs "
                             f"{(need + SPACE_MARGIN_BYTES) / MIB:.0f} MiB with these params")
        self._tmpfs_dir, self._tmpfs_skipped = self._make_tmpfs_dir()

    def run(self) -> list[Sample]:
        assert self._data_dir is not None, "prepare() must run first"
        reps = int(self.param("repetitions"))
        tmpfs = self._tmpfs_dir
        # fio: a step per run. Checkpoint: one step (one child). Data set: writing the
        # files, then reading them (one child).
        steps = 3 * reps + 3 + ((reps + 2) if tmpfs is not None else 0)
        progress = _Progress(lambda step: self.ctx.report(self.name, step, steps))
        fio = self._fio_plan()
        count = int(self.param("smallfile_count"))
        record = int(self.param("smallfile_kib")) * 1024
        # A child step may take as long as the probe may (the time limit cuts it sooner).
        timeout = self.param("probe_time_limit")

        source = DATA_DIR_ENV if data_root()[1] else "default"
        meta = self._dir_metadata(self._data_dir, source)
        if self._tmpfs_skipped is not None:
            meta["tmpfs_skipped"] = self._tmpfs_skipped
        samples = fio_samples(self._data_dir, "", meta, reps, fio, progress.step, sequential=True)
        samples += checkpoint_samples(self._data_dir, int(self.param("checkpoint_mib")),
                                      int(self.ctx.params.get("seed", 0)), reps, meta,
                                      step=progress.step, timeout=timeout)
        samples += dataset_samples(self._data_dir, "", meta, count, record, reps, packed=True,
                                   step=progress.step, timeout=timeout)
        if tmpfs is not None:
            tmeta = self._dir_metadata(tmpfs, "tmpfs")
            samples += fio_samples(tmpfs, "_tmpfs", tmeta, reps, fio, progress.step, sequential=False)
            samples += dataset_samples(tmpfs, "_tmpfs", tmeta, count, record, reps, packed=False,
                                       step=progress.step, timeout=timeout)
        return samples

    def cleanup(self) -> None:
        for directory in (self._data_dir, self._tmpfs_dir):
            if directory is not None:
                shutil.rmtree(directory, ignore_errors=True)
        self._data_dir = self._tmpfs_dir = None
        if self._created_root and self._data_root is not None:
            try:
                # Only if empty: another run may be using the shared default directory.
                self._data_root.rmdir()
            except OSError:
                pass
            self._created_root = False

    # -- setup helpers --------------------------------------------------------------------

    def _fio_plan(self) -> FioPlan:
        numjobs = int(self.param("fio_numjobs"))
        return FioPlan(numjobs=numjobs, job_mib=max(1, int(self.param("fio_size_mib")) // numjobs),
                       runtime_s=int(self.param("fio_runtime")),
                       seed=int(self.ctx.params.get("seed", 0)))

    def _dataset_bytes(self) -> int:
        return int(self.param("smallfile_count")) * int(self.param("smallfile_kib")) * 1024

    def _data_bytes(self) -> int:
        # fio files, one checkpoint, the small files and their packed copy; each is
        # deleted before the next starts but sizing for all keeps the check simple.
        return (self._fio_plan().total_bytes + int(self.param("checkpoint_mib")) * MIB
                + 2 * self._dataset_bytes())

    def _make_tmpfs_dir(self) -> tuple[Path | None, str | None]:
        # Containers often have no /dev/shm or a 64 MiB one: skip the reference
        # figures then rather than failing the whole probe, and say so in metadata.
        if not TMPFS_DIR.is_dir() or not os.access(TMPFS_DIR, os.W_OK):
            return None, f"{TMPFS_DIR} is missing or not writable"
        need = max(self._fio_plan().total_bytes, self._dataset_bytes()) + SPACE_MARGIN_BYTES
        free = shutil.disk_usage(TMPFS_DIR).free
        if free < need:
            return None, (f"{TMPFS_DIR} has {free / MIB:.0f} MiB free, "
                          f"{need / MIB:.0f} MiB needed")
        try:
            return Path(tempfile.mkdtemp(prefix="benchctl-storage-", dir=TMPFS_DIR)), None
        except OSError as exc:
            return None, f"cannot create a directory in {TMPFS_DIR}: {exc}"

    @staticmethod
    def _dir_metadata(directory: Path, source: str) -> dict[str, Any]:
        # The parent: the per-run subdirectory's random name says nothing to a reader.
        return {"directory": str(directory.parent), "filesystem": filesystem_type(directory),
                "directory_source": source}


def data_root() -> tuple[Path, bool]:
    """The directory to measure, and whether it came from ``$BENCH_DATA_DIR``."""
    configured = os.environ.get(DATA_DIR_ENV)
    if configured:
        return Path(configured).absolute(), True
    return Path(tempfile.gettempdir()) / "benchctl-data", False


def filesystem_type(path: Path) -> str:
    """The type of the file system holding ``path`` (ext4, xfs, tmpfs, nfs4...) per /proc."""
    try:
        mounts = Path("/proc/self/mounts").read_text(encoding="utf-8")
    except OSError:
        return "unknown"
    resolved = str(path.resolve())
    best, fstype = "", "unknown"
    for line in mounts.splitlines():
        fields = line.split()
        if len(fields) < 3:
            continue
        # /proc/mounts escapes spaces in mount points as \040.
        mount = fields[1].replace("\\040", " ")
        inside = resolved == mount or resolved.startswith(mount.rstrip("/") + "/")
        if inside and len(mount) >= len(best):
            best, fstype = mount, fields[2]
    return fstype


# -- small helpers ----------------------------------------------------------------------------


class _Progress:
    def __init__(self, report: Callable[[int], None]) -> None:
        self._report = report
        self._step = 0

    def step(self) -> None:
        self._step += 1
        self._report(self._step)
