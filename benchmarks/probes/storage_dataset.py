"""The storage probe's data set step: many small files (and the same records packed in one file)
read through a torch DataLoader, as a training job's input pipeline reads them.

The files are written from the probe; the DataLoader reads run in a child process
(benchmarks.probes.isolated), held to the probe's time limit.
"""

from __future__ import annotations

import io
import os
import shutil
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from benchmarks.probes import isolated
from benchmarks.probes.base import ProbeError
from benchmarks.probes.storage_cache import PAGE_CACHE_NOTE, drop_cached_pages
from contract.sample import Sample, per_second, summarise

# A batch like a data loader's; default collation stacks the records into one tensor.
LOADER_BATCH_SIZE = 64
# Keeps directories small enough that a million files do not make lookups the bottleneck.
FILES_PER_SUBDIR = 1000


def dataset_samples(directory: Path, suffix: str, meta: dict[str, Any], count: int, record: int,
                    reps: int, packed: bool, step: Callable[[], None],
                    timeout: float) -> list[Sample]:
    """Files/s reading ``count`` files of ``record`` bytes in ``directory`` (and, if
    ``packed``, one file of the same records); ``step`` is called before writing and before
    reading."""
    step()
    root = directory / "smallfiles"
    packed_path = directory / "packed.bin" if packed else None
    on_tmpfs = suffix == "_tmpfs"
    write_dataset(root, count, record, packed_path, sync=not on_tmpfs)
    ds_meta = meta | {"files": count, "file_kib": record // 1024, "num_workers": 0,
                      "batch_size": LOADER_BATCH_SIZE, "shuffle": False,
                      # tmpfs pages are the storage itself; there is no cache to drop.
                      "page_cache": "tmpfs" if on_tmpfs else PAGE_CACHE_NOTE}
    step()
    config = {"root": str(root), "count": count, "record": record, "repetitions": reps,
              "packed": str(packed_path) if packed_path is not None else None,
              "drop_cache": not on_tmpfs}
    found = isolated.call("benchmarks.probes.storage_dataset:measure_reads", config, timeout,
                          what=f"the data loader reads in {directory}")
    samples = [summarise(f"storage.smallfile_read{suffix}", found["small"], ds_meta)]
    if packed_path is not None:
        samples.append(summarise(f"storage.packedfile_read{suffix}", found["packed"], ds_meta))
        packed_path.unlink(missing_ok=True)
    shutil.rmtree(root, ignore_errors=True)
    return samples


def measure_reads(config: dict[str, Any]) -> dict[str, list[float]]:
    """In the child: files/s of each pass over the small files (and over the packed file)."""
    root = Path(config["root"])
    count = int(config["count"])
    record = int(config["record"])
    paths = [dataset_path(root, index) for index in range(count)]
    small: list[float] = []
    for _ in range(int(config["repetitions"])):
        if config["drop_cache"]:
            for path in paths:
                drop_cached_pages(path)
        small.append(per_second(count, time_loader(SmallFiles(paths, record), count)))
    found = {"small": small}
    if config["packed"] is not None:
        packed_path = Path(config["packed"])
        packed: list[float] = []
        for _ in range(int(config["repetitions"])):
            drop_cached_pages(packed_path)
            dataset = PackedFile(packed_path, count, record)
            try:
                packed.append(per_second(count, time_loader(dataset, count)))
            finally:
                dataset.close()
        found["packed"] = packed
    return found


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


def dataset_path(root: Path, index: int) -> Path:
    """Where record ``index`` of the small-file data set lives (the writer and the reader agree)."""
    return root / f"{index // FILES_PER_SUBDIR:04d}" / f"{index:07d}.bin"


def write_dataset(root: Path, count: int, record: int, packed: Path | None, sync: bool) -> None:
    """Write ``count`` random files of ``record`` bytes (and their packed copy)."""
    packed_file = open(packed, "wb") if packed is not None else None
    try:
        for index in range(count):
            path = dataset_path(root, index)
            if index % FILES_PER_SUBDIR == 0:
                path.parent.mkdir(parents=True, exist_ok=True)
            # Random bytes: a compressing or deduplicating file system must not shrink them.
            data = os.urandom(record)
            path.write_bytes(data)
            if packed_file is not None:
                packed_file.write(data)
    finally:
        if packed_file is not None:
            packed_file.close()
    if sync:
        # Dirty pages cannot be evicted; write them back so drop_cached_pages works.
        os.sync()


def _read_exactly(f: io.FileIO, buf: bytearray, what: str) -> None:
    got = f.readinto(buf)
    if got != len(buf):
        raise ProbeError(f"short read from {what}: {got} of {len(buf)} bytes")
