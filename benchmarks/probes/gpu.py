"""GPU probe: NVML inventory, matmul TFLOP/s in fp32 and bf16, device memory copy bandwidth.

On a host without CUDA the same figures are measured on the CPU and every sample says so
(metadata device="cpu", gpu="skipped: no NVIDIA GPU"): never a zero standing in for a GPU.
The measurement runs in a child process (benchmarks.probes.isolated), held to the probe's
time limit. torch is imported inside functions, so importing this module stays cheap.
"""

from __future__ import annotations

import contextlib
import math
import time
from collections.abc import Callable, Iterator
from typing import Any

from benchmarks import nvml
from benchmarks.nvml import NO_GPU
from benchmarks.probes import cpu_threads, isolated
from benchmarks.probes.base import Probe, ProbeError
from contract import metrics
from contract.sample import Sample, summarise

MIB = 1 << 20
GB = 1e9
# Each timed repetition runs at least this long, so launch overhead and timer resolution vanish.
MIN_REP_S = 0.2
MAX_ITERS = 1000
# A CPU-only host would take minutes at GPU sizes (bf16 especially): cap n there, and say so.
CPU_MAX_N = 2048


class GpuProbe(Probe):
    name = "gpu"
    produces = metrics.family("gpu")

    def prepare(self) -> None:
        try:
            import torch  # noqa: F401 - only checking it is there
        except ImportError as exc:
            raise ProbeError(f"torch is not installed: {exc}") from None

    def run(self) -> list[Sample]:
        # One step: the measurement runs in a child (see measure) and reports nothing
        # until it ends.
        self.ctx.report(self.name, 1, 1)
        config = {"repetitions": int(self.param("repetitions")),
                  "matmul_n": int(self.param("matmul_n")), "memcpy_mib": int(self.param("memcpy_mib"))}
        found = isolated.call("benchmarks.probes.gpu:measure", config,
                              timeout=self.param("probe_time_limit"), what="the GPU measurement")
        return [Sample.from_dict(sample) for sample in found]


def measure(config: dict[str, Any]) -> list[dict[str, Any]]:
    """The probe's samples, as dicts. Runs in a child process (benchmarks.probes.isolated):
    a hung kernel dies with it, and its device memory is freed when it exits."""
    import torch

    cuda = torch.cuda.is_available()
    device = torch.device("cuda", 0) if cuda else torch.device("cpu")
    reps = int(config["repetitions"])
    requested_n = int(config["matmul_n"])
    n = requested_n if cuda else min(requested_n, CPU_MAX_N)
    meta: dict[str, Any] = {"device": device.type, "torch_version": torch.__version__}
    if cuda:
        meta["device_name"] = torch.cuda.get_device_name(device)
        meta["inventory"] = nvml.inventory()
    else:
        cpu_threads.apply(torch)  # where the host shares its cores, what it may use
        meta |= {"gpu": NO_GPU, "inventory": NO_GPU, "cpu_threads": torch.get_num_threads()}
    samples: list[Sample] = []
    for metric, dtype in (("gpu.matmul_tflops_fp32", torch.float32),
                          ("gpu.matmul_tflops_bf16", torch.bfloat16)):
        values, iters = matmul_tflops(device, dtype, n, reps)
        samples.append(summarise(metric, values, meta | {
            "matmul_n": n, "matmul_n_requested": requested_n, "iterations_per_rep": iters,
            "dtype": str(dtype).removeprefix("torch."),
            # fp32 on CUDA is true fp32 unless TF32 is allowed; record which was measured.
            "allow_tf32": bool(torch.backends.cuda.matmul.allow_tf32) if cuda else None}))
    mib = int(config["memcpy_mib"])
    values, iters = memcpy_gbs(device, mib, reps)
    samples.append(summarise("gpu.memcpy_bw", values, meta | {
        "size_mib": mib, "iterations_per_rep": iters, "counted": "read + write (2 x bytes)",
        "copy": "device to device" if cuda else "cpu tensor copy"}))
    return [sample.as_dict() for sample in samples]


def _timed(device: Any, op: Callable[[], None], reps: int) -> tuple[list[float], int]:
    """Seconds per op, one figure per repetition; each repetition runs ops for >= MIN_REP_S."""
    import torch

    def sync() -> None:
        if device.type == "cuda":
            torch.cuda.synchronize(device)

    op()  # warm-up: kernel selection, allocator, caches
    sync()
    start = time.perf_counter()
    op()
    sync()
    once = max(time.perf_counter() - start, 1e-9)
    iters = max(1, min(MAX_ITERS, math.ceil(MIN_REP_S / once)))
    per_op = []
    for _ in range(reps):
        sync()
        start = time.perf_counter()
        for _ in range(iters):
            op()
        sync()
        per_op.append((time.perf_counter() - start) / iters)
    return per_op, iters


def matmul_tflops(device: Any, dtype: Any, n: int, reps: int,
                  allow_tf32: bool | None = None) -> tuple[list[float], int]:
    """TFLOP/s of an n x n x n matmul, one figure per repetition. ``allow_tf32`` sets
    torch's TF32 switch for fp32 on CUDA for this measurement only (None: as it is)."""
    import torch

    a = torch.randn(n, n, device=device).to(dtype)
    b = torch.randn(n, n, device=device).to(dtype)
    out = torch.empty(n, n, device=device, dtype=dtype)

    def op() -> None:
        torch.matmul(a, b, out=out)

    with tf32_matmul(allow_tf32):
        seconds, iters = _timed(device, op, reps)
    return [2.0 * n**3 / s / 1e12 for s in seconds], iters


@contextlib.contextmanager
def tf32_matmul(allow: bool | None) -> Iterator[None]:
    """torch's TF32 switch for CUDA matmuls, set for the block and restored after. The
    legacy flag, the one ``measure`` records: torch refuses a mix of it and the newer
    ``fp32_precision``."""
    import torch

    if allow is None:
        yield
        return
    before = torch.backends.cuda.matmul.allow_tf32
    torch.backends.cuda.matmul.allow_tf32 = allow
    try:
        yield
    finally:
        torch.backends.cuda.matmul.allow_tf32 = before


def memcpy_gbs(device: Any, mib: int, reps: int) -> tuple[list[float], int]:
    import torch

    nbytes = mib * MIB
    src = torch.ones(nbytes, dtype=torch.uint8, device=device)
    dst = torch.empty_like(src)

    def op() -> None:
        dst.copy_(src)

    seconds, iters = _timed(device, op, reps)
    return [2.0 * nbytes / s / GB for s in seconds], iters


def host_copy_gbs(device: Any, mib: int, reps: int, to_device: bool) -> tuple[list[float], int]:
    """GB/s of one copy between pinned host memory and ``device`` (a CUDA device), host to
    device or back: bytes counted once, the way nvbandwidth and bandwidthTest count them."""
    import torch

    nbytes = mib * MIB
    host = torch.ones(nbytes, dtype=torch.uint8).pin_memory()
    gpu = torch.empty(nbytes, dtype=torch.uint8, device=device)
    src, dst = (host, gpu) if to_device else (gpu, host)

    def op() -> None:
        dst.copy_(src, non_blocking=True)

    seconds, iters = _timed(device, op, reps)
    return [nbytes / s / GB for s in seconds], iters
