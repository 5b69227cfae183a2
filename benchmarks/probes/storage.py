"""Storage probe: fio random/sequential I/O, checkpoint save/load, small-file dataset reads.

Everything runs in a per-run subdirectory of ``$BENCH_DATA_DIR`` (default
``<tempdir>/benchctl-data``): the directory a training job would keep its data and
checkpoints in, which is not necessarily the root file system. The random-read and
small-file figures are repeated on tmpfs (``/dev/shm``) as a memory-speed reference,
so a slow data directory can be told from a slow host.
"""

from __future__ import annotations

import errno
import io
import os
import shutil
import tempfile
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from benchmarks import runner
from benchmarks.parsers import ParseError
from benchmarks.parsers.fio import FioError, FioResult, parse_fio
from benchmarks.probes.base import Probe, ProbeError
from benchmarks.sample import Sample, summarise
from contract import metrics

DATA_DIR_ENV = "BENCH_DATA_DIR"
# Only ever used through mkdtemp, so a shared world-writable directory is safe.
TMPFS_DIR = Path("/dev/shm")  # noqa: S108
GB = 1e9
MIB = 1024 * 1024
NS_PER_US = 1000.0
# psync is built into every fio; libaio/io_uring may be missing or disabled in containers.
FIO_IOENGINE = "psync"
# psync is synchronous: each job has one I/O in flight (what Little's law is checked with).
FIO_IODEPTH = 1
# All three fio runs in a directory share these files, so fio lays them out once.
FIO_FILENAME_FORMAT = "benchctl-fio.$jobnum"
# A batch like a data loader's; default collation stacks the records into one tensor.
LOADER_BATCH_SIZE = 64
# Keeps directories small enough that a million files do not make lookups the bottleneck.
FILES_PER_SUBDIR = 1000
CHECKPOINT_SHARD_MIB = 64
# Room left free on the file system beyond what the probe itself writes.
SPACE_MARGIN_BYTES = 64 * MIB
PAGE_CACHE_NOTE = ("evicted per file with posix_fadvise(DONTNEED) before each read (best effort, "
                   "no root needed); pages the kernel keeps anyway may still be served from cache")



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
        steps = 7 * reps + 1 + ((2 * reps + 1) if tmpfs is not None else 0)
        progress = _Progress(lambda step: self.ctx.report(self.name, step, steps))

        source = DATA_DIR_ENV if data_root()[1] else "default"
        meta = self._dir_metadata(self._data_dir, source)
        if self._tmpfs_skipped is not None:
            meta["tmpfs_skipped"] = self._tmpfs_skipped
        samples = self._fio_samples(self._data_dir, "", meta, reps, progress, sequential=True)
        samples += self._checkpoint_samples(self._data_dir, meta, reps, progress)
        samples += self._dataset_samples(self._data_dir, "", meta, reps, progress, packed=True)
        if tmpfs is not None:
            tmeta = self._dir_metadata(tmpfs, "tmpfs")
            samples += self._fio_samples(tmpfs, "_tmpfs", tmeta, reps, progress, sequential=False)
            samples += self._dataset_samples(tmpfs, "_tmpfs", tmeta, reps, progress, packed=False)
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

    def _fio_job_mib(self) -> int:
        return max(1, int(self.param("fio_size_mib")) // int(self.param("fio_numjobs")))

    def _fio_bytes(self) -> int:
        return self._fio_job_mib() * int(self.param("fio_numjobs")) * MIB

    def _dataset_bytes(self) -> int:
        return int(self.param("smallfile_count")) * int(self.param("smallfile_kib")) * 1024

    def _data_bytes(self) -> int:
        # fio files, one checkpoint, the small files and their packed copy; each is
        # deleted before the next starts but sizing for all keeps the check simple.
        return (self._fio_bytes() + int(self.param("checkpoint_mib")) * MIB
                + 2 * self._dataset_bytes())

    def _make_tmpfs_dir(self) -> tuple[Path | None, str | None]:
        # Containers often have no /dev/shm or a 64 MiB one: skip the reference
        # figures then rather than failing the whole probe, and say so in metadata.
        if not TMPFS_DIR.is_dir() or not os.access(TMPFS_DIR, os.W_OK):
            return None, f"{TMPFS_DIR} is missing or not writable"
        need = max(self._fio_bytes(), self._dataset_bytes()) + SPACE_MARGIN_BYTES
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

    # -- fio ------------------------------------------------------------------------------

    def _fio_samples(self, directory: Path, suffix: str, meta: dict[str, Any], reps: int,
                     progress: _Progress, sequential: bool) -> list[Sample]:
        direct: dict[str, Any] = {"direct": 1}
        randread = [self._fio(directory, "randread", "4k", direct, progress) for _ in range(reps)]
        first = randread[0]
        fio_meta = meta | direct | {
            "tool": "fio", "version": first.fio_version, "ioengine": FIO_IOENGINE,
            "numjobs": first.jobs, "size_mib_per_job": self._fio_job_mib(),
            "runtime_s": int(self.param("fio_runtime")),
        }
        samples = [
            summarise(f"storage.randread_iops{suffix}", [r.read_iops for r in randread],
                       fio_meta | {"bs": "4k"}),
        ]
        for metric, attr in (("clat_p50", "read_clat_p50_ns"), ("clat_p99", "read_clat_p99_ns"),
                             ("clat_p999", "read_clat_p999_ns"), ("lat_mean", "read_lat_mean_ns")):
            values = [_required(getattr(r, attr), attr) / NS_PER_US for r in randread]
            samples.append(summarise(f"storage.randread_{metric}{suffix}", values,
                                      fio_meta | {"bs": "4k", "iodepth": FIO_IODEPTH}))
        if sequential:
            seqread = [self._fio(directory, "read", "1M", direct, progress) for _ in range(reps)]
            seqwrite = [self._fio(directory, "write", "1M", direct, progress) for _ in range(reps)]
            samples += [
                summarise(f"storage.seqread_bw{suffix}", [r.read_bw_bytes / GB for r in seqread],
                           fio_meta | {"bs": "1M"}),
                summarise(f"storage.seqwrite_bw{suffix}",
                           [r.write_bw_bytes / GB for r in seqwrite],
                           fio_meta | {"bs": "1M", "end_fsync": 1}),
            ]
        # The fio files can be large and on tmpfs they are RAM: free them now.
        for path in directory.glob("benchctl-fio.*"):
            path.unlink(missing_ok=True)
        return samples

    def _fio(self, directory: Path, rw: str, bs: str, direct: dict[str, Any],
             progress: _Progress) -> FioResult:
        """One fio run; ``direct`` is updated in place if O_DIRECT turns out unsupported."""
        progress.step()
        runtime = int(self.param("fio_runtime"))
        argv = ["fio", f"--name={rw}", f"--directory={directory}",
                f"--filename_format={FIO_FILENAME_FORMAT}", f"--rw={rw}", f"--bs={bs}",
                f"--numjobs={int(self.param('fio_numjobs'))}", f"--size={self._fio_job_mib()}m",
                f"--runtime={runtime}", "--time_based", "--group_reporting",
                f"--ioengine={FIO_IOENGINE}", "--output-format=json",
                # The platform's seed: offsets a host cannot know before the run.
                f"--randseed={int(self.ctx.params.get('seed', 0))}"]
        if rw == "write":
            # Without it buffered (fallback) writes would be timed into the page cache.
            argv.append("--end_fsync=1")
        # Laying out the files happens before the timed part; allow for a slow disk.
        timeout = runtime + 120 + self._fio_bytes() / (20 * MIB)
        while True:
            try:
                result = runner.run(argv + [f"--direct={direct['direct']}"], timeout=timeout)
            except (runner.CommandTimeout, runner.CommandNotFound) as exc:
                raise ProbeError(f"fio {rw} in {directory}: {exc}") from None
            try:
                return parse_fio(result.stdout)
            except FioError as exc:
                # tmpfs before Linux 6.6 (and some FUSE/network file systems) reject
                # O_DIRECT with EINVAL; measure buffered I/O there and say so.
                if direct["direct"] == 1 and errno.EINVAL in exc.errnos:
                    direct["direct"] = 0
                    direct["direct_fallback"] = "O_DIRECT not supported here (EINVAL); buffered I/O"
                    continue
                raise ProbeError(f"fio {rw} in {directory} failed: {exc}"
                                 f"{_stderr_tail(result.stderr)}") from None
            except ParseError as exc:
                raise ProbeError(f"fio {rw} in {directory} printed unexpected output: {exc}"
                                 f"{_stderr_tail(result.stderr)}") from None

    # -- checkpoint -----------------------------------------------------------------------

    def _checkpoint_samples(self, directory: Path, meta: dict[str, Any], reps: int,
                            progress: _Progress) -> list[Sample]:
        import torch
        state = make_state_dict(int(self.param("checkpoint_mib")), int(self.ctx.params.get("seed", 0)))
        path = directory / "checkpoint.pt"
        writes: list[float] = []
        reads: list[float] = []
        size = 0
        for _ in range(reps):
            progress.step()
            # A fresh file each time, as a training run writes a new checkpoint.
            path.unlink(missing_ok=True)
            start = time.perf_counter()
            with open(path, "wb") as f:
                torch.save(state, f)
                f.flush()
                os.fsync(f.fileno())
            write_s = time.perf_counter() - start
            size = path.stat().st_size
            writes.append(size / GB / _positive(write_s))

            progress.step()
            drop_cached_pages(path)
            start = time.perf_counter()
            loaded = torch.load(path, weights_only=True)
            read_s = time.perf_counter() - start
            if len(loaded) != len(state):
                raise ProbeError(f"checkpoint read back {len(loaded)} tensors, wrote {len(state)}")
            del loaded
            reads.append(size / GB / _positive(read_s))
        path.unlink(missing_ok=True)
        ck_meta = meta | {"checkpoint_bytes": size, "tensors": len(state), "torch": torch.__version__}
        return [
            summarise("storage.checkpoint_write", writes, ck_meta | {"fsync": True}),
            summarise("storage.checkpoint_read", reads, ck_meta | {"page_cache": PAGE_CACHE_NOTE}),
        ]

    # -- small files ----------------------------------------------------------------------

    def _dataset_samples(self, directory: Path, suffix: str, meta: dict[str, Any], reps: int,
                         progress: _Progress, packed: bool) -> list[Sample]:
        count = int(self.param("smallfile_count"))
        record = int(self.param("smallfile_kib")) * 1024
        progress.step()
        root = directory / "smallfiles"
        packed_path = directory / "packed.bin" if packed else None
        on_tmpfs = suffix == "_tmpfs"
        paths = write_dataset(root, count, record, packed_path, sync=not on_tmpfs)
        ds_meta = meta | {"files": count, "file_kib": record // 1024, "num_workers": 0,
                          "batch_size": LOADER_BATCH_SIZE, "shuffle": False,
                          # tmpfs pages are the storage itself; there is no cache to drop.
                          "page_cache": "tmpfs" if on_tmpfs else PAGE_CACHE_NOTE}
        small: list[float] = []
        for _ in range(reps):
            progress.step()
            if not on_tmpfs:
                for path in paths:
                    drop_cached_pages(path)
            small.append(count / _positive(time_loader(SmallFiles(paths, record), count)))
        samples = [summarise(f"storage.smallfile_read{suffix}", small, ds_meta)]
        if packed_path is not None:
            packed_rates: list[float] = []
            for _ in range(reps):
                progress.step()
                drop_cached_pages(packed_path)
                dataset = PackedFile(packed_path, count, record)
                try:
                    packed_rates.append(count / _positive(time_loader(dataset, count)))
                finally:
                    dataset.close()
            samples.append(summarise(f"storage.packedfile_read{suffix}", packed_rates, ds_meta))
            packed_path.unlink(missing_ok=True)
        shutil.rmtree(root, ignore_errors=True)
        return samples


# -- datasets ---------------------------------------------------------------------------------


class SmallFiles:
    """One record per file, opened on every access, as an image-folder dataset does."""

    def __init__(self, paths: Sequence[Path], record: int) -> None:
        self.paths = paths
        self.record = record

    def __len__(self) -> int:
        return len(self.paths)

    def __getitem__(self, index: int) -> Any:
        import torch
        buf = bytearray(self.record)
        with open(self.paths[index], "rb", buffering=0) as f:
            _read_exactly(f, buf, str(self.paths[index]))
        return torch.frombuffer(buf, dtype=torch.uint8)


class PackedFile:
    """The same records back to back in one file, opened once and read in order."""

    def __init__(self, path: Path, count: int, record: int) -> None:
        self.path = path
        self.count = count
        self.record = record
        self._file: io.FileIO | None = None

    def __len__(self) -> int:
        return self.count

    def __getitem__(self, index: int) -> Any:
        import torch
        if self._file is None:
            # Opened lazily so a worker process would get its own handle.
            self._file = open(self.path, "rb", buffering=0)
        self._file.seek(index * self.record)
        buf = bytearray(self.record)
        _read_exactly(self._file, buf, f"{self.path} record {index}")
        return torch.frombuffer(buf, dtype=torch.uint8)

    def close(self) -> None:
        if self._file is not None:
            self._file.close()
            self._file = None


def time_loader(dataset: Any, expected: int) -> float:
    """Seconds to read every record of ``dataset`` through a single-process DataLoader."""
    from torch.utils.data import DataLoader
    loader = DataLoader(dataset, batch_size=LOADER_BATCH_SIZE, num_workers=0, shuffle=False)
    seen = 0
    start = time.perf_counter()
    for batch in loader:
        seen += int(batch.shape[0])
    elapsed = time.perf_counter() - start
    if seen != expected:
        raise ProbeError(f"the data loader returned {seen} records, expected {expected}")
    return elapsed


def write_dataset(root: Path, count: int, record: int, packed: Path | None,
                  sync: bool) -> list[Path]:
    """Write ``count`` random files of ``record`` bytes (and their packed copy)."""
    paths: list[Path] = []
    packed_file = open(packed, "wb") if packed is not None else None
    try:
        for index in range(count):
            subdir = root / f"{index // FILES_PER_SUBDIR:04d}"
            if index % FILES_PER_SUBDIR == 0:
                subdir.mkdir(parents=True, exist_ok=True)
            path = subdir / f"{index:07d}.bin"
            # Random bytes: a compressing or deduplicating file system must not shrink them.
            data = os.urandom(record)
            path.write_bytes(data)
            if packed_file is not None:
                packed_file.write(data)
            paths.append(path)
    finally:
        if packed_file is not None:
            packed_file.close()
    if sync:
        # Dirty pages cannot be evicted; write them back so drop_cached_pages works.
        os.sync()
    return paths


def make_state_dict(mib: int, seed: int = 0) -> dict[str, Any]:
    """Random float32 tensors totalling ``mib`` MiB, in shards like a model's layers."""
    import torch
    generator = torch.Generator().manual_seed(seed)
    state: dict[str, Any] = {}
    remaining = mib * MIB
    index = 0
    while remaining > 0:
        nbytes = min(remaining, CHECKPOINT_SHARD_MIB * MIB)
        state[f"layers.{index}.weight"] = torch.rand(nbytes // 4, generator=generator)
        remaining -= nbytes
        index += 1
    return state


def drop_cached_pages(path: Path) -> None:
    """Ask the kernel to evict ``path``'s clean pages; needs no privileges (best effort)."""
    fadvise = getattr(os, "posix_fadvise", None)
    if fadvise is None:
        return
    fd = os.open(path, os.O_RDONLY)
    try:
        fadvise(fd, 0, 0, os.POSIX_FADV_DONTNEED)
    finally:
        os.close(fd)


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


def _read_exactly(f: io.FileIO, buf: bytearray, what: str) -> None:
    got = f.readinto(buf)
    if got != len(buf):
        raise ProbeError(f"short read from {what}: {got} of {len(buf)} bytes")


def _required(value: float | None, what: str) -> float:
    if value is None:
        raise ProbeError(f"fio reported no {what} for a read test")
    return value


def _positive(seconds: float) -> float:
    # perf_counter can return 0 for a very fast step on coarse clocks.
    return max(seconds, 1e-9)


def _stderr_tail(stderr: str) -> str:
    tail = stderr.strip()[-500:]
    return f" (stderr: {tail})" if tail else ""


