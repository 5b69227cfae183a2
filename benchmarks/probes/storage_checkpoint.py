"""The storage probe's checkpoint step: torch.save a state dict (with fsync), torch.load it back.

The torch work runs in a child process (benchmarks.probes.isolated), held to the probe's time
limit; the tensors it makes are freed when the child exits, not kept by the worker.
"""

from __future__ import annotations

import os
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from benchmarks.probes import isolated
from benchmarks.probes.base import ProbeError
from benchmarks.probes.storage_cache import PAGE_CACHE_NOTE, drop_cached_pages
from contract.sample import Sample, per_second, summarise

GB = 1e9
MIB = 1024 * 1024
CHECKPOINT_SHARD_MIB = 64


def checkpoint_samples(directory: Path, mib: int, seed: int, reps: int, meta: dict[str, Any],
                       step: Callable[[], None], timeout: float) -> list[Sample]:
    """Write and read back a ``mib`` MiB checkpoint in ``directory``, ``reps`` times, in one
    child; ``step`` is called before it starts."""
    step()
    config = {"path": str(directory / "checkpoint.pt"), "mib": mib, "seed": seed,
              "repetitions": reps}
    found = isolated.call("benchmarks.probes.storage_checkpoint:measure_checkpoint", config,
                          timeout, what=f"the checkpoint step in {directory}")
    ck_meta = meta | {"checkpoint_bytes": found["bytes"], "tensors": found["tensors"],
                      "torch": found["torch"]}
    return [
        summarise("storage.checkpoint_write", found["write_gbs"], ck_meta | {"fsync": True}),
        summarise("storage.checkpoint_read", found["read_gbs"], ck_meta | {"page_cache": PAGE_CACHE_NOTE}),
    ]


def measure_checkpoint(config: dict[str, Any]) -> dict[str, Any]:
    """In the child: GB/s of each write and read, the file's size, the tensors, torch's version."""
    import torch

    path = Path(config["path"])
    state = make_state_dict(int(config["mib"]), int(config["seed"]))
    writes: list[float] = []
    reads: list[float] = []
    size = 0
    for _ in range(int(config["repetitions"])):
        # A fresh file each time, as a training run writes a new checkpoint.
        path.unlink(missing_ok=True)
        start = time.perf_counter()
        with open(path, "wb") as f:
            torch.save(state, f)
            f.flush()
            os.fsync(f.fileno())
        write_s = time.perf_counter() - start
        size = path.stat().st_size
        writes.append(per_second(size / GB, write_s))

        drop_cached_pages(path)
        start = time.perf_counter()
        loaded = torch.load(path, weights_only=True)
        read_s = time.perf_counter() - start
        if len(loaded) != len(state):
            raise ProbeError(f"checkpoint read back {len(loaded)} tensors, wrote {len(state)}")
        del loaded
        reads.append(per_second(size / GB, read_s))
    path.unlink(missing_ok=True)
    return {"write_gbs": writes, "read_gbs": reads, "bytes": size, "tensors": len(state),
            "torch": torch.__version__}


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
