"""TrainingProbe for real: two gloo ranks on this host, small parameters."""

from __future__ import annotations

import os
import statistics
import time
from typing import Any

import pytest
import torch
import torch.multiprocessing as mp

from benchmarks.probes.base import ProbeContext
from benchmarks.probes.training import TrainingProbe, free_port
from contract.metrics import METRICS as ALL_METRICS
from contract.sample import Sample
from contract.suites import PARAMS

# The busbw test compares the probe's all-reduce timing with direct ones: beside another test
# process the two see different loads (CI once read 0.57 GB/s from the probe and 1.65 directly),
# so the module runs alone, in the serial part; and even there the machine's load moves between
# one timing and the next (CI, serial: 0.83 from the probe, 1.88 directly a minute later), so the
# direct timing is taken just before the probe and just after it, and the probe must lie near
# the range the two span.
pytestmark = pytest.mark.serial

SMALL = {"training_ranks": 2, "model_mib": 2, "train_steps": 5, "allreduce_max_mib": 4,
         "dataloader_samples": 256, "training_batch": 16, "repetitions": 9}
WARMUP = 5  # as the probe (and nccl-tests' -w default)
GPU_ONLY = {"training.gpu_util_mean", "training.gpu_util_p5", "training.gpu_util_below80",
            "training.gpu_power_mean"}
METRICS = [m for m in ALL_METRICS.values() if m.name.startswith("training.")]


@pytest.fixture(scope="module")
def run() -> tuple[dict[str, Sample], float, list[tuple[str, int, int]], tuple[float, float]]:
    params = {name: float(p.default) for name, p in PARAMS.items()} | SMALL
    progress: list[tuple[str, int, int]] = []
    probe = TrainingProbe(ProbeContext(params=params,
                                       report=lambda p, s, n: progress.append((p, s, n))))
    probe.prepare()
    before = _direct_busbw()
    start = time.monotonic()
    samples = probe.run()
    elapsed = time.monotonic() - start
    after = _direct_busbw()
    probe.cleanup()
    return {s.metric: s for s in samples}, elapsed, progress, (before, after)


def test_every_metric_present_with_its_unit(run: Any) -> None:
    by_metric, elapsed, progress, _ = run
    expected = {m.name: m for m in METRICS if m.name not in GPU_ONLY}
    assert set(by_metric) == set(expected)
    for name, metric in expected.items():
        sample = by_metric[name]
        assert sample.unit == metric.unit
        assert metric.low <= sample.value <= metric.high, (name, sample.value)
    assert elapsed < 60
    assert progress[-1] == ("training", 2, 2)


def test_figures_are_plausible(run: Any) -> None:
    by_metric = run[0]
    step = by_metric["training.step_time"]
    assert step.n == SMALL["train_steps"]
    assert by_metric["training.step_time_p95"].value >= step.value
    meta = step.metadata
    # Two ranks on the CPU (gloo); on a GPU host one per GPU, at most two (NCCL).
    gpus = torch.cuda.device_count() if torch.cuda.is_available() else 0
    assert meta["backend"] == ("nccl" if gpus else "gloo") and meta["batch_size"] == 16
    assert meta["world_size"] == (min(2, gpus) if gpus else 2)
    assert meta["model_params"] > 0 and meta["torch_version"]
    if not gpus:  # the reason is recorded, and no utilisation figure is invented
        assert meta["gpu_utilization"] == "skipped: no NVIDIA GPU"
    if meta["world_size"] < 2:  # one GPU: nothing to all-reduce, and the sample says so
        assert "training.allreduce_busbw" not in by_metric and meta["comm"].startswith("skipped")
    else:
        assert 0 < by_metric["training.comm_share"].value < 1
        assert by_metric["training.allreduce_busbw"].value > 0
        assert by_metric["training.allreduce_busbw_largest"].value > 0
        assert by_metric["training.compute_time"].value < step.value
        curve = by_metric["training.allreduce_busbw"].metadata["curve"]
        assert [row["size_mib"] for row in curve] == [1, 2, 4]
        # With two ranks busbw = algbw * 2(n-1)/n = algbw.
        assert all(row["busbw_gbs"] == pytest.approx(row["algbw_gbs"]) for row in curve)
    data = by_metric["training.dataloader_samples_per_s"].metadata
    settings = {(row["num_workers"], row["prefetch_factor"]) for row in data["table"]}
    cores = os.cpu_count() or 1
    assert {w for w, _ in settings} == {0, cores // 2, max(0, cores - 1)}
    assert (0, None) in settings
    assert all(pf in (2, 4) for w, pf in settings if w > 0)
    assert data["recommendation"].startswith("num_workers=")


def _direct_rank(rank: int, port: int, nbytes: int, reps: int, out: Any) -> None:
    """An independent all-reduce timing: same size, same busbw formula as nccl-tests.

    Every rank hands in its times: the collective ends when its slowest rank does, so a rep
    counts at its slowest rank's time, as nccl-tests and the probe count it.
    """
    import torch
    import torch.distributed as dist

    os.environ["MASTER_ADDR"] = "127.0.0.1"
    os.environ["MASTER_PORT"] = str(port)
    torch.set_num_threads(1)
    dist.init_process_group("gloo", rank=rank, world_size=2)
    tensor = torch.ones(nbytes // 4)
    for _ in range(WARMUP):
        dist.all_reduce(tensor)
    times = []
    for _ in range(reps):
        dist.barrier()
        start = time.perf_counter()
        dist.all_reduce(tensor)
        times.append(time.perf_counter() - start)
    out.put(times)
    dist.destroy_process_group()


def _direct_busbw() -> float:
    nbytes = SMALL["allreduce_max_mib"] << 20
    ctx = mp.get_context("spawn")
    queue = ctx.SimpleQueue()
    mp.start_processes(_direct_rank, args=(free_port(), nbytes, SMALL["repetitions"], queue), nprocs=2,
                       join=True, start_method="spawn")
    per_rank = [queue.get(), queue.get()]
    seconds = statistics.median(max(pair) for pair in zip(*per_rank, strict=True))
    return nbytes / seconds / 1e9 * (2 * (2 - 1) / 2)


def test_busbw_matches_a_direct_measurement(run: Any) -> None:
    probe_busbw = run[0]["training.allreduce_busbw_largest"].value
    direct = list(run[3])
    if not min(direct) / 2 <= probe_busbw <= max(direct) * 2:
        # The machine's rate had moved between the timings (CI3: the probe 1.55 GB/s, the
        # direct timings before and after it 0.70 and 0.55; other runs 1.65-1.88 directly):
        # one more direct timing, now, says where the machine is.
        direct.append(_direct_busbw())
    assert min(direct) / 2 <= probe_busbw <= max(direct) * 2, (probe_busbw, direct)
