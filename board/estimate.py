"""A training job's step time and cost on a candidate, from the candidate's measured figures.

Pure arithmetic over a workload (a preset from board/data/workloads.yaml, or explicit
figures) and what was measured on the node or cluster. Per optimizer step, each part shown:

    compute  = B x F / (R x T)                      B samples, F training FLOPs per sample,
                                                    R ranks, T measured TFLOP/s per rank
    t_b      = 2(R-1)/R x S_b / busbw(S_b)            ring all-reduce of one DDP bucket: the
                                                    gradient bytes in DDP's buckets (1 MiB
                                                    first, then 25 MiB), busbw interpolated
                                                    on the curve measured across these ranks
                                                    at the bucket's size (so latency is in it)
    exposed  = end of the last bucket's all-reduce - end of backward, at least 0:
               bucket b is ready when backward has produced its bytes (backward spread
               evenly over the gradient bytes, last layer first), and the buckets go out one
               after another, each when it is ready and the previous one is done (DDP's
               overlap; with A accumulation micro-steps only the last one's backward hides
               it; backward = 2/3 of compute). Ranks on a CPU (gloo) hide nothing: the
               reduction runs on the cores backward is using.
    stall    = max(0, B / L - (compute + exposed))   L samples/s the input path delivers
                                                    (DataLoader, capped by the storage's
                                                    files/s for the job's layout), prefetched
    ckpt     = C / W / I                            C bytes every I steps at W bytes/s
    step     = compute + exposed + stall + ckpt;  hours = steps x step / 3600
    staging  = what streaming the data from the buyer's site adds (board/staging.py); a copy
               made once adds its hours before the job instead; no probe from the site: unknown
    cost     = monthly price x hours / 730

This module is the model; its accuracy against measured DDP runs is checked by
`make bench-accuracy`, not assumed.
"""

from __future__ import annotations

import bisect
import math
from collections.abc import Sequence
from dataclasses import dataclass, field, replace
from functools import lru_cache
from pathlib import Path
from typing import Any

import yaml

from board import staging
from config.errors import Invalid
from contract import places
from contract.outcomes import Skipped

PRESETS_FILE = Path(__file__).resolve().parent / "data" / "workloads.yaml"
BUCKET_BYTES = 25 * 2**20  # DDP's default bucket_cap_mb
FIRST_BUCKET_BYTES = 2**20  # DDP's first bucket (torch.distributed._DEFAULT_FIRST_BUCKET_BYTES)
GRAD_BYTES = 4  # DDP all-reduces gradients in the parameters' dtype: fp32 under autocast
OVERLAP = 1.0  # share of the backward pass that hides gradient sync (ideal DDP)
BACKWARD = 2 / 3  # backward's share of a training step's compute (2 of the 6 x N FLOPs forward)
HOURS_PER_MONTH = 730
BOTTLENECK_SHARE = 0.05


class BadWorkload(Invalid, ValueError):
    default_field = "workload"


class Unestimable(BadWorkload):
    """A candidate whose figures cannot carry the estimate: why, as an outcome code."""

    def __init__(self, skipped: Skipped) -> None:
        super().__init__(skipped.words(), field="candidate", code=skipped.code)
        self.skipped = skipped


@dataclass(frozen=True)
class Workload:
    name: str
    params: float
    train_flops_per_sample: float
    global_batch: int  # samples per optimizer step, all ranks together
    steps: int
    nodes: int = 1
    gpus_per_node: int = 1
    accumulation: int = 1
    precision: str = "bf16"  # which matmul figure compute is divided by
    sample_bytes: int = 0
    packed: bool = True
    checkpoint_bytes: float = 0.0
    checkpoint_interval: int = 0  # steps; 0: no checkpoints
    # A job that runs on CPUs, asked for explicitly: then a CPU's matmul is the compute
    # figure. A GPU job (the default) never takes a CPU's figure for a GPU's (#32).
    cpu_only: bool = False
    # The job's data (board/staging.py): its size, where it lives (on the node, or at one of
    # the buyer's sites, named for the sentences) and how the job reads it.
    dataset_gb: float = 0.0
    data_site: int | None = None
    data_site_name: str = ""
    data_site_city: str = ""  # as enrolled: its province is where renting brings the data near
    data_use: str = staging.COPY_ONCE

    @property
    def ranks(self) -> int:
        return self.nodes * self.gpus_per_node


@dataclass(frozen=True)
class Measured:
    """What the candidate's figures say, per rank or per node as named."""

    tflops: float  # matmul TFLOP/s of one rank at the job's precision
    # (message bytes, GB/s), any order: measured across the candidate's ranks, so each
    # message's latency is in its figure
    busbw_curve: Sequence[tuple[float, float]]
    loader_samples_per_s: float | None = None  # one node's DataLoader, best settings
    small_files_per_s: float | None = None  # one node's storage, a file per sample
    packed_files_per_s: float | None = None  # the same records packed in shards
    checkpoint_gbs: float | None = None
    price_cny_month: float | None = None  # every node of the candidate together
    link_gbps: float | None = None  # the slowest link, for the faster-link what-if
    on_cpu: bool = False  # the compute figure is a CPU's (no GPU on the host)
    # From the buyer's site to the candidate (its slowest node), as `benchctl probe` measured.
    site_gbps: float | None = None
    site_rtt_ms: float | None = None
    province: str = ""  # the candidate's, as its region was enrolled


@dataclass
class Estimate:
    parts: dict[str, float]  # seconds per optimizer step: compute, sync, input, checkpoint
    step_s: float
    hours: float
    cost_cny: float | None
    bottleneck: str  # "" when compute bounds the step
    shares: dict[str, float] = field(default_factory=dict)
    # Parts the job needs but the candidate has no figure for: counted as 0 and named, never
    # filled with a typical value.
    unmeasured: list[str] = field(default_factory=list)
    sync_total_s: float = 0.0  # the whole all-reduce time, hidden or not
    what_ifs: dict[str, Estimate] = field(default_factory=dict)
    # Moving the data from the buyer's site: a code (contract.outcomes.STAGING) and values.
    staging: dict[str, Any] = field(default_factory=dict)


@lru_cache(maxsize=1)
def presets() -> dict[str, dict[str, Any]]:
    return {p["name"]: p for p in yaml.safe_load(PRESETS_FILE.read_text())["presets"]}


def from_preset(name: str, steps: int, nodes: int = 1, gpus_per_node: int = 1,
                **overrides: Any) -> Workload:
    """A preset's workload; ``overrides`` (any Workload field) win over the preset's figures."""
    preset = presets().get(name)
    if preset is None:
        raise BadWorkload(f"unknown preset {name!r}; known: {', '.join(sorted(presets()))}",
                          field="preset")
    fields: dict[str, Any] = {
        "params": float(preset["params"]),
        "train_flops_per_sample": float(preset["train_flops_per_sample"]),
        "global_batch": int(preset["global_batch"]), "sample_bytes": int(preset.get("sample_bytes", 0)),
        "precision": str(preset.get("precision", "bf16"))}
    return Workload(name=name, steps=steps, nodes=nodes, gpus_per_node=gpus_per_node,
                    **(fields | overrides))


def busbw_at(curve: Sequence[tuple[float, float]], size: float) -> float:
    """GB/s at a message size: linear in log(size) between measured sizes, flat beyond."""
    return _busbw_on(_points(curve), size)


def _points(curve: Sequence[tuple[float, float]]) -> list[tuple[float, float]]:
    points = sorted((s, b) for s, b in curve if s > 0 and b > 0)
    if not points:
        raise Unestimable(Skipped("no-busbw"))
    return points


def _busbw_on(points: list[tuple[float, float]], size: float) -> float:
    """busbw_at on a curve sorted once (_points)."""
    i = bisect.bisect_left(points, (size,))
    if i == 0:
        return points[0][1]
    if i == len(points):
        return points[-1][1]
    (s0, b0), (s1, b1) = points[i - 1], points[i]
    t = (math.log(size) - math.log(s0)) / (math.log(s1) - math.log(s0))
    return b0 + t * (b1 - b0)


def buckets(grad_bytes: float) -> list[float]:
    """DDP's buckets in the order they are reduced (last layers first): 1 MiB, then 25 MiB."""
    first, full, rest = bucket_counts(grad_bytes)
    return [first] + [float(BUCKET_BYTES)] * full + ([rest] if rest else [])


def bucket_counts(grad_bytes: float) -> tuple[float, int, float]:
    """The first bucket's bytes, how many full 25 MiB buckets follow, and the last one's."""
    first = min(grad_bytes, float(FIRST_BUCKET_BYTES))
    full, rest = divmod(grad_bytes - first, BUCKET_BYTES)
    return first, int(full), rest


def sync_seconds(w: Workload, m: Measured, backward_s: float) -> tuple[float, float]:
    """The step's whole all-reduce time, and the part of it left after backward ends.

    Bucket k is ready when backward has produced its bytes and goes out when it is ready
    and the one before is done: finish_k = max(ready_k, finish_(k-1)) + t_k. The full
    buckets are alike (same t, ready at equal spacing), so their run is in closed form:
    after n of them, finish = max(finish_0 + n t, ready_1 + n t, ready_n + t). A client's
    model size costs the same arithmetic whatever it is (a 1e13-parameter model was 1.5
    million iterations, 18 s of CPU an estimate)."""
    if w.ranks < 2:
        return 0.0, 0.0
    points = _points(m.busbw_curve)
    total = w.params * GRAD_BYTES
    factor = 2 * (w.ranks - 1) / w.ranks

    def seconds(size: float) -> float:
        return factor * size / (_busbw_on(points, size) * 1e9)

    def ready(produced: float) -> float:
        return backward_s * produced / total

    first, full, rest = bucket_counts(total)
    whole = seconds(first)
    finish = ready(first) + whole
    if full:
        t = seconds(float(BUCKET_BYTES))
        first_ready, last_ready = ready(first + BUCKET_BYTES), ready(first + full * BUCKET_BYTES)
        finish = max(finish + full * t, first_ready + full * t, last_ready + t)
        whole += full * t
    if rest:
        last = seconds(rest)
        finish = max(ready(total), finish) + last
        whole += last
    return whole, max(0.0, finish - backward_s)


def estimate(w: Workload, m: Measured, what_ifs: bool = True) -> Estimate:
    if w.global_batch < 1 or w.steps < 1 or w.ranks < 1 or w.accumulation < 1:
        raise BadWorkload("global_batch, steps, nodes, gpus_per_node and accumulation must be "
                          "at least 1")
    if m.tflops <= 0:
        raise Unestimable(Skipped("no-matmul"))
    compute = w.global_batch * w.train_flops_per_sample / (w.ranks * m.tflops * 1e12)
    # DDP hides a bucket's all-reduce behind the rest of backward when something other than
    # the computing cores moves and sums it (NCCL: its own CUDA stream, the NIC). Ranks on a
    # CPU (gloo) reduce on the very cores backward is using: nothing is hidden.
    overlap = 0.0 if m.on_cpu else OVERLAP
    sync, exposed = sync_seconds(w, m, overlap * BACKWARD * compute / w.accumulation)
    storage = m.packed_files_per_s if w.packed else m.small_files_per_s
    rates = [r * w.nodes for r in (m.loader_samples_per_s, storage) if r]
    stall = max(0.0, w.global_batch / min(rates) - (compute + exposed)) if rates else 0.0
    unmeasured = [] if rates else ["input"]
    wants_ckpt = bool(w.checkpoint_bytes and w.checkpoint_interval)
    ckpt = (w.checkpoint_bytes / (m.checkpoint_gbs * 1e9) / w.checkpoint_interval
            if wants_ckpt and m.checkpoint_gbs else 0.0)
    if wants_ckpt and not m.checkpoint_gbs:
        unmeasured.append("checkpoint")
    parts = {"compute": compute, "sync": exposed, "input": stall, "checkpoint": ckpt}
    moved = data_staging(w, m, compute + exposed + stall)
    if moved.get("code") == "unknown":
        unmeasured.append("staging")
    if w.data_site is not None and w.dataset_gb:
        parts["staging"] = moved.get("stream_s", 0.0)
    step = sum(parts.values())
    # A copy made once comes before the job; streaming's cost is in every step already.
    once = moved.get("copy_s", 0.0) if w.data_use == staging.COPY_ONCE else 0.0
    hours = (w.steps * step + once) / 3600
    shares = {k: v / step for k, v in parts.items()} if step else {}
    worst = max([k for k in parts if k != "compute"], key=lambda k: parts[k])
    # A part under BOTTLENECK_SHARE of the step is noise beside compute: compute bounds it.
    out = Estimate(parts=parts, step_s=step, hours=hours,
                   cost_cny=m.price_cny_month * hours / HOURS_PER_MONTH if m.price_cny_month else None,
                   bottleneck=worst if shares.get(worst, 0) >= BOTTLENECK_SHARE else "",
                   shares=shares,
                   unmeasured=unmeasured, sync_total_s=sync,
                   staging={k: v for k, v in moved.items() if k not in ("copy_s", "stream_s")})
    if what_ifs:
        out.what_ifs = alternatives(w, m)
    return out


def data_staging(w: Workload, m: Measured, rest_s: float) -> dict[str, Any]:
    """The data's way from the buyer's site: nothing when it is on the node; "unknown" when
    no probe from the site measured this candidate (never counted as nothing); else the
    one-off copy, and for streaming what it adds to each step (board/staging.py)."""
    if w.data_site is None or not w.dataset_gb:
        return {}
    values: dict[str, Any] = {"site": w.data_site_name, "gb": w.dataset_gb}
    if not m.site_gbps or m.site_rtt_ms is None:
        return {"code": "unknown", "values": values}
    copy_s = staging.copy_seconds(w.dataset_gb * 1e9, m.site_gbps)
    values |= {"copy_hours": copy_s / 3600, "gbps": m.site_gbps, "rtt_ms": m.site_rtt_ms}
    if w.data_use == staging.COPY_ONCE:
        return {"code": staging.COPY_ONCE, "values": values, "copy_s": copy_s}
    if not w.sample_bytes:
        raise BadWorkload("streaming the data needs sample_bytes (one sample's size), so that "
                          "each step's bytes and requests are known", field="sample_bytes")
    fetch = staging.fetch_seconds(w.global_batch, w.sample_bytes, w.packed, m.site_gbps,
                                  m.site_rtt_ms)
    stall = staging.stream_stall(fetch, rest_s)
    near = places.province_of(w.data_site_city)
    if near and m.province and m.province.lower() != near.lower():
        return {"code": staging.STREAM_ELSEWHERE, "copy_s": copy_s, "stream_s": stall,
                "values": values | {"seconds": stall, "province": near}}
    return {"code": staging.STREAM, "values": values | {"seconds": stall}, "copy_s": copy_s,
            "stream_s": stall}


NEXT_LINK_CLASS = [1.0, 10.0, 25.0, 100.0, 200.0, 400.0]  # Gbit/s, nominal


def alternatives(w: Workload, m: Measured) -> dict[str, Estimate]:
    """The same samples with 4x gradient accumulation (a 4x larger global batch, a quarter of
    the steps), with packed data, and on the next faster link class."""
    out = {"accumulation_x4": estimate(replace(
        w, accumulation=w.accumulation * 4, global_batch=w.global_batch * 4,
        steps=max(1, math.ceil(w.steps / 4))), m, what_ifs=False)}
    if not w.packed:
        out["packed"] = estimate(replace(w, packed=True), m, what_ifs=False)
    if w.nodes > 1 and m.link_gbps:
        faster = next((c for c in NEXT_LINK_CLASS if c * 0.9 > m.link_gbps * 1.05), None)
        if faster is not None:
            scale = faster * 0.9 / m.link_gbps  # what an honest link of that class measures
            out[f"link_{faster:g}gbe"] = estimate(w, replace(
                m, busbw_curve=[(s, b * scale) for s, b in m.busbw_curve],
                link_gbps=faster * 0.9), what_ifs=False)
    return out
