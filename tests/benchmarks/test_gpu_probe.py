"""GpuProbe for real on this host: on a GPU, figures of the GPU under its model's published
peak; on a CPU-only host, figures measured on the CPU, under the CPU bound, and marked so."""

from __future__ import annotations

import os
from typing import Any

import pytest
import torch

from benchmarks.probes import cpu_threads
from benchmarks.probes.base import ProbeContext
from benchmarks.probes.gpu import GpuProbe, tf32_matmul
from contract import gpu_models
from contract.metrics import METRICS as ALL_METRICS
from contract.sample import Sample
from contract.suites import PARAMS
from jobs.services.consistency import PEAK_SLACK

CUDA = torch.cuda.is_available()
METRICS = [m for m in ALL_METRICS.values() if m.name.startswith("gpu.")]


@pytest.fixture(scope="module")
def samples() -> dict[str, Sample]:
    params = {name: float(p.default) for name, p in PARAMS.items()} | {
        "matmul_n": 256, "memcpy_mib": 16, "repetitions": 3}
    probe = GpuProbe(ProbeContext(params=params))
    probe.prepare()
    return {s.metric: s for s in probe.run()}


def test_every_gpu_metric_with_its_unit_and_repetitions(samples: dict[str, Sample]) -> None:
    assert set(samples) == {m.name for m in METRICS}
    units = {m.name: m.unit for m in METRICS}
    for name, sample in samples.items():
        assert sample.unit == units[name]
        assert sample.value > 0 and sample.n == 3
    fp32 = samples["gpu.matmul_tflops_fp32"]
    assert fp32.metadata["matmul_n"] == 256 and fp32.metadata["dtype"] == "float32"
    assert samples["gpu.matmul_tflops_bf16"].metadata["dtype"] == "bfloat16"


def test_figures_stay_under_the_measured_devices_peak(samples: dict[str, Sample]) -> None:
    # A figure above what the device can do means the timing is wrong. The ceiling is the
    # one intake applies: the GPU model's published peak (fp32 without TF32, as recorded),
    # or on a host without a GPU the table's CPU bound.
    if CUDA:
        peak = gpu_models.lookup(torch.cuda.get_device_name(0))
        assert peak is not None, "add this GPU model to contract/data/gpu_models.yaml"
    else:
        peak = gpu_models.cpu()
    fp32 = samples["gpu.matmul_tflops_fp32"]
    ceiling = {"gpu.matmul_tflops_fp32": peak.tf32 if fp32.metadata["allow_tf32"] else peak.fp32,
               "gpu.matmul_tflops_bf16": peak.bf16, "gpu.memcpy_bw": peak.memory_gbs}
    for name, sample in samples.items():
        assert sample.max is not None and sample.max <= ceiling[name] * PEAK_SLACK, name


@pytest.mark.skipif(CUDA, reason="this host has a GPU: the CPU-only markings do not apply")
def test_a_cpu_run_marks_gpu_figures_skipped(samples: dict[str, Sample]) -> None:
    for sample in samples.values():
        assert sample.metadata["device"] == "cpu"
        assert sample.metadata["gpu"] == "skipped: no NVIDIA GPU"
        assert sample.metadata["inventory"] == "skipped: no NVIDIA GPU"
    assert samples["gpu.matmul_tflops_fp32"].metadata["allow_tf32"] is None


@pytest.mark.skipif(not CUDA, reason="no CUDA device on this host (torch.cuda.is_available())")
def test_a_gpu_run_records_the_device_and_its_inventory(samples: dict[str, Sample]) -> None:
    meta: dict[str, Any] = samples["gpu.matmul_tflops_bf16"].metadata
    assert meta["device"] == "cuda" and "gpu" not in meta
    assert meta["device_name"] == torch.cuda.get_device_name(0)
    inventory = meta["inventory"]
    assert inventory["available"] is True
    assert inventory["devices"][0]["name"] == meta["device_name"]
    assert isinstance(samples["gpu.matmul_tflops_fp32"].metadata["allow_tf32"], bool)


def test_the_tf32_switch_is_set_for_one_measurement_and_restored() -> None:
    before = torch.backends.cuda.matmul.allow_tf32
    with tf32_matmul(not before):
        assert torch.backends.cuda.matmul.allow_tf32 is (not before)
    assert torch.backends.cuda.matmul.allow_tf32 is before
    with tf32_matmul(None):  # None: left as it is
        assert torch.backends.cuda.matmul.allow_tf32 is before


@pytest.mark.skipif(CUDA, reason="this host has a GPU: the CPU's threads do not apply")
@pytest.mark.parametrize("threads", [1, 2])
def test_on_a_cpu_it_computes_with_the_threads_a_host_sharing_its_cores_may_use(
        threads: int, monkeypatch: pytest.MonkeyPatch) -> None:
    """BENCH_TORCH_THREADS (benchmarks.probes.cpu_threads): the lab's hosts share one
    machine's cores."""
    monkeypatch.setenv(cpu_threads.ENV, str(threads))
    params = {name: float(p.default) for name, p in PARAMS.items()} | {
        "matmul_n": 64, "memcpy_mib": 1, "repetitions": 1}
    probe = GpuProbe(ProbeContext(params=params))
    probe.prepare()
    found = {s.metric: s for s in probe.run()}
    assert found["gpu.matmul_tflops_fp32"].metadata["cpu_threads"] == threads


@pytest.mark.parametrize(("value", "count"), [("3", 3), ("", None), ("0", None), ("two", None),
                                              ("-1", None)])
def test_only_a_positive_count_is_taken_else_the_ranks_share_the_cores(
        value: str, count: int | None, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(cpu_threads.ENV, value)
    assert cpu_threads.configured() == count
    assert cpu_threads.for_ranks(2) == (count or max(1, (os.cpu_count() or 1) // 2))
