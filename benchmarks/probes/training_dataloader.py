"""The training probe's input pipeline: DataLoader throughput over worker and prefetch settings,
on a data set whose items cost what decoding a small image costs.

Runs in the launcher child (benchmarks.probes.isolated); torch is imported inside functions.
"""

from __future__ import annotations

import os
import time
import zlib
from typing import Any, cast

DATALOADER_BATCH = 32


class SyntheticImages:
    """A map-style dataset whose items cost what decoding a small compressed image costs.

    Each item inflates a zlib blob (like PNG) and converts it to a normalised float tensor.
    Top-level and picklable, because DataLoader workers receive it.
    """

    def __init__(self, length: int, side: int = 224) -> None:  # an ImageNet-sized crop
        self.length = length
        self.side = side
        raw = bytes((i * 31 + (i >> 7) * 17) % 251 for i in range(3 * side * side))
        # Low compression level: realistic ratio, and a decode cost that dominates the item.
        self.blob = zlib.compress(raw, 1)

    def __len__(self) -> int:
        return self.length

    def __getitem__(self, index: int) -> Any:
        import torch

        raw = bytearray(zlib.decompress(self.blob))
        img = torch.frombuffer(raw, dtype=torch.uint8).reshape(3, self.side, self.side)
        img = img.float().div_(255.0)
        if index % 2:
            img = img.flip(2)  # the usual random flip, deterministic here
        return (img - img.mean()) / (img.std() + 1e-6)


def dataloader_settings(cpu_count: int) -> list[tuple[int, int | None]]:
    workers = sorted({0, max(0, cpu_count // 2), max(0, cpu_count - 1)})
    return [(w, pf) for w in workers for pf in ((None,) if w == 0 else (2, 4))]


def measure_dataloader(config: dict[str, Any]) -> dict[str, Any]:
    import torch
    from torch.utils.data import DataLoader

    # A decoder runs single-threaded, as DataLoader workers do: same for num_workers=0.
    torch.set_num_threads(1)
    cpu_count = os.cpu_count() or 1
    samples = int(config["dataloader_samples"])
    dataset = SyntheticImages(samples)
    table: list[dict[str, Any]] = []
    for workers, prefetch in dataloader_settings(cpu_count):
        # cast: the dataset is a plain class so that importing this module needs no torch.
        loader: Any = DataLoader(cast(Any, dataset), batch_size=DATALOADER_BATCH, shuffle=False,
                                 num_workers=workers, prefetch_factor=prefetch)
        it = iter(loader)
        next(it)  # not timed: worker start-up is a one-off, not throughput
        count = 0
        start = time.perf_counter()
        for batch in it:
            count += int(batch.shape[0])
        elapsed = time.perf_counter() - start
        del it, loader
        if count == 0:
            raise RuntimeError(f"dataloader_samples={samples} is under two batches of {DATALOADER_BATCH}")
        table.append({"num_workers": workers, "prefetch_factor": prefetch,
                      "samples_per_s": count / elapsed, "seconds": elapsed})
    return {"table": table, "cpu_count": cpu_count, "samples": samples,
            "batch_size": DATALOADER_BATCH, "sample_bytes": 3 * dataset.side * dataset.side,
            "torch_version": torch.__version__}
