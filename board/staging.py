"""Moving a training job's data from the buyer's site to the candidate (pure arithmetic).

The figures are the buyer's own site probe (`benchctl probe`): the site-to-node throughput
G (Gbit/s) and TCP round trip R. Data of D bytes, a step of B samples of S bytes:

    copy once   copy_s = 8 D / G                         before the job starts, once
    streaming   fetch  = 8 B S / G + n R / P             per step: the bytes at the measured
                                                         throughput, plus n requests of one
                                                         round trip each, P in flight
                n      = B (small files: one request a sample) or ceil(B S / shard) (packed)
                stall  = max(0, fetch - the rest of the step)   prefetched behind it

Limits per request are data (board/data/staging.yaml, with their source).
"""

from __future__ import annotations

import math
from pathlib import Path

from contract import rules

BOUNDS = {name: b.value for name, b in
          rules.load_bounds(Path(__file__).resolve().parent / "data" / "staging.yaml").items()}
ON_NODE, SITE = "on-node", "site"
COPY_ONCE, STREAM = "copy-once", "stream"
STREAM_ELSEWHERE = "stream-elsewhere"  # streamed, and the candidate is outside the site's province


def copy_seconds(dataset_bytes: float, gbps: float) -> float:
    """The whole data set at the site-to-node throughput."""
    return dataset_bytes * 8 / (gbps * 1e9)


def requests_per_step(batch_bytes: float, samples: int, packed: bool) -> int:
    if not packed:
        return samples
    return max(1, math.ceil(batch_bytes / (BOUNDS["shard_mb"] * 1e6)))


def fetch_seconds(samples: int, sample_bytes: float, packed: bool, gbps: float,
                  rtt_ms: float) -> float:
    """One step's input, streamed from the site: its bytes and its round trips."""
    batch_bytes = samples * sample_bytes
    waits = requests_per_step(batch_bytes, samples, packed) * rtt_ms / 1000.0
    return batch_bytes * 8 / (gbps * 1e9) + waits / BOUNDS["stream_readers"]


def stream_stall(fetch_s: float, rest_s: float) -> float:
    """What streaming adds to a step: the fetch beyond the rest of the step it hides behind."""
    return max(0.0, fetch_s - rest_s)
