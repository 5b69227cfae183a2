"""GpuProbe for real on this CPU-only host: figures measured on the CPU, and marked so."""

from __future__ import annotations

import torch

from benchmarks.probes.base import ProbeContext
from benchmarks.probes.gpu import GpuProbe
from contract import gpu_models
from contract.metrics import METRICS as ALL_METRICS
from contract.suites import PARAMS


def test_cpu_run_marks_gpu_figures_skipped() -> None:
    params = {name: float(p.default) for name, p in PARAMS.items()} | {
        "matmul_n": 256, "memcpy_mib": 16, "repetitions": 3}
    probe = GpuProbe(ProbeContext(params=params))
    probe.prepare()
    samples = {s.metric: s for s in probe.run()}
    assert set(samples) == {m.name for m in METRICS}
    units = {m.name: m.unit for m in METRICS}
    for name, sample in samples.items():
        assert sample.unit == units[name]
        assert sample.value > 0 and sample.n == 3
        if not torch.cuda.is_available():
            assert sample.metadata["device"] == "cpu"
            assert sample.metadata["gpu"] == "skipped: no NVIDIA GPU"
            assert sample.metadata["inventory"] == "skipped: no NVIDIA GPU"
    fp32 = samples["gpu.matmul_tflops_fp32"]
    assert fp32.metadata["matmul_n"] == 256 and fp32.metadata["dtype"] == "float32"
    assert samples["gpu.matmul_tflops_bf16"].metadata["dtype"] == "bfloat16"
    # A figure above what the device can do means the timing is wrong: a 2-core CPU does
    # well under a TFLOP/s; a GPU stays under its model's published fp32 peak (TF32 is off,
    # as recorded).
    if torch.cuda.is_available():
        peak = gpu_models.lookup(torch.cuda.get_device_name(0))
        assert peak is not None, "add this GPU model to contract/data/gpu_models.yaml"
        assert fp32.value <= peak.fp32 * 1.05
    else:
        assert fp32.value < 5


METRICS = [m for m in ALL_METRICS.values() if m.name.startswith('gpu.')]
