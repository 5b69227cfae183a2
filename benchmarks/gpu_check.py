"""`make gpu-check` and `benchctl doctor --gpu`: every GPU path of the suite on this host, in
under five minutes, each figure beside the published one for the GPU model.

1. The NVML inventory (benchmarks.nvml), read here: without NVML there is no NVIDIA GPU, the
   check says so and succeeds (there is nothing to check; the GPU probes say skipped).
2. Per GPU, in a child process (benchmarks.probes.isolated, as the GPU probe measures):
   matmul in fp32, TF32, bf16 and fp16 at several sizes, device memory copy bandwidth and
   pinned host-to-device and device-to-host copies, with the GPU probe's own measurement
   functions, NVML utilisation and power sampled through it, and an NVML snapshot (clocks,
   why they are held back, power, temperature, the PCIe link) right after each load.
3. NCCL all-reduce across the host's GPUs (the busbw curve) and a few DDP steps on NCCL,
   through the training probe's own launcher (benchmarks.probes.training.launch_ranks),
   its NVML sampler in rank 0, and its samples (training_samples).
4. The report (benchmarks.gpu_report, a pure function of the results and contract/data/gpu_models.yaml):
   each figure as a fraction of the model's published one, ``LOW`` under the table's
   ``check`` thresholds with what to look at, and the board's health (ECC, remapped rows,
   NVLink links down, a lowered power limit). Exit 1 when anything is LOW, faulty or failed.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import time
from dataclasses import asdict
from typing import Any

from benchmarks import nvml
from benchmarks.gpu_lines import render
from benchmarks.gpu_report import report
from benchmarks.probes import cpu_threads, isolated
from benchmarks.probes.base import ProbeError

SIZES = (2048, 4096, 8192)
PRECISIONS = ("fp32", "tf32", "bf16", "fp16")
MEMCPY_MIB = 1024
HOST_COPY_MIB = 256
REPETITIONS = 3
# The per-GPU part stops measuring further GPUs after this long (8 GPUs take about 90 s on an
# H100 board), so that the whole check stays under five minutes; those GPUs say so.
DEVICES_BUDGET_S = 150.0
DEVICES_TIMEOUT_S = 240.0
DISTRIBUTED_TIMEOUT_S = 150.0
# DDP on NCCL for a few steps: an MLP of this many MiB of parameters, the probe's shape.
DDP = {"model_mib": 64, "train_steps": 10, "batch": 256, "allreduce_max_mib": 256,
       "nvml_period_s": 0.1}


# --- measuring (in child processes) ---


def measure_devices(config: dict[str, Any]) -> dict[str, Any]:
    """In a child: every GPU's figures (``config["device"] == "cpu"`` measures the CPU once,
    for the tests of a host without a GPU: no host copies, no NVML)."""
    import torch

    from benchmarks.probes import gpu

    cuda = config.get("device") != "cpu" and torch.cuda.is_available()
    if not cuda:
        cpu_threads.apply(torch)  # the CPU measured on cores it shares, with what it may use
    if config.get("device") != "cpu" and not cuda:
        raise ProbeError(f"torch {torch.__version__} sees no CUDA device: install the CUDA "
                         "build of torch (requirements.txt says how)")
    found: dict[str, Any] = {"torch": torch.__version__, "cuda": torch.version.cuda,
                             "nccl": _nccl_version(torch) if cuda else None, "devices": []}
    start = time.monotonic()
    targets = [torch.device("cuda", i) for i in range(torch.cuda.device_count())] if cuda \
        else [torch.device("cpu")]
    handles = _nvml_handles(torch, len(targets)) if cuda else None
    for device in targets:
        if time.monotonic() - start > float(config.get("budget_s", DEVICES_BUDGET_S)):
            found["devices"].append({"index": device.index, "skipped": (
                f"the check's time budget ({config.get('budget_s', DEVICES_BUDGET_S):g} s) "
                "was spent on the GPUs before this one")})
            continue
        nvml_handle = handles[device.index] if handles and device.index is not None else None
        try:
            found["devices"].append(_measure_device(torch, gpu, device, config, nvml_handle))
        except RuntimeError as exc:  # CUDA errors (out of memory, ECC, Xid): this GPU's own
            found["devices"].append({"index": device.index, "failed": f"{exc}"[:500]})
    return found


def _measure_device(torch: Any, gpu: Any, device: Any, config: dict[str, Any],
                    nvml_handle: tuple[Any, Any] | None) -> dict[str, Any]:
    if device.type == "cuda":
        torch.cuda.set_device(device)
    sampler = (nvml.NvmlSampler(period_s=0.1, devices=[nvml_handle[1]], nvml=nvml_handle[0])
               if nvml_handle else None)
    if sampler is not None:
        sampler.start()
    try:
        out = _figures(torch, gpu, device, config, nvml_handle)
    finally:
        summary = sampler.stop() if sampler is not None else None
    if sampler is not None:
        out["nvml"] = asdict(summary) if summary is not None else sampler.skipped
    return out


def _figures(torch: Any, gpu: Any, device: Any, config: dict[str, Any],
             nvml_handle: tuple[Any, Any] | None) -> dict[str, Any]:
    cuda = device.type == "cuda"
    reps = int(config.get("repetitions", REPETITIONS))
    out: dict[str, Any] = {"index": device.index, "device": device.type,
                           "name": torch.cuda.get_device_name(device) if cuda else "cpu",
                           "nvml_index": nvml_handle[1] if nvml_handle else None, "matmul": []}
    dtypes = {"fp32": (torch.float32, False), "tf32": (torch.float32, True),
              "bf16": (torch.bfloat16, None), "fp16": (torch.float16, None)}
    for precision in config.get("precisions", PRECISIONS):
        dtype, tf32 = dtypes[precision]
        for n in config.get("sizes", SIZES):
            values, _ = gpu.matmul_tflops(device, dtype, int(n), reps,
                                          allow_tf32=tf32 if cuda else None)
            out["matmul"].append({"precision": precision, "n": int(n)} | _spread(values))
    out["after_matmul"] = _snapshot(nvml_handle)
    mib = int(config.get("memcpy_mib", MEMCPY_MIB))
    values, _ = gpu.memcpy_gbs(device, mib, reps)
    out["memory"] = {"mib": mib, "counted": "read + write (2 x bytes)"} | _spread(values)
    if cuda:
        mib = int(config.get("host_copy_mib", HOST_COPY_MIB))
        for key, to_device in (("host_to_device", True), ("device_to_host", False)):
            values, _ = gpu.host_copy_gbs(device, mib, reps, to_device)
            out[key] = {"mib": mib, "pinned": True} | _spread(values)
        out["after_host_copy"] = _snapshot(nvml_handle)
        torch.cuda.empty_cache()
    else:
        out["host_copy_skipped"] = "skipped: no CUDA device"
    return out


def _spread(values: list[float]) -> dict[str, Any]:
    return {"median": statistics.median(values), "min": min(values), "max": max(values),
            "repetitions": len(values)}


def _nccl_version(torch: Any) -> str | None:
    try:
        version = torch.cuda.nccl.version()
    except Exception:  # noqa: BLE001 - a torch built without NCCL: say none
        return None
    return ".".join(str(v) for v in version) if isinstance(version, tuple) else str(version)


def _nvml_handles(torch: Any, count: int) -> dict[int, tuple[Any, int]] | None:
    """CUDA index -> (pynvml, NVML index): matched by UUID where torch gives it, since
    CUDA_VISIBLE_DEVICES and CUDA's device order can both differ from NVML's."""
    pynvml, _ = nvml.load_nvml()
    if pynvml is None:
        return None
    def key(uuid: Any) -> str:  # NVML writes "GPU-8b1e...", torch "8b1e..."
        return str(uuid).lower().removeprefix("gpu-")

    found = nvml.inventory(pynvml)
    by_uuid = {key(d["uuid"]): d["index"] for d in found.get("devices", []) if d.get("uuid")}
    handles = {}
    for index in range(count):
        uuid = getattr(torch.cuda.get_device_properties(index), "uuid", None)
        handles[index] = (pynvml, by_uuid.get(key(uuid), index) if uuid is not None else index)
    return handles


def _snapshot(nvml_handle: tuple[Any, int] | None) -> dict[str, Any] | None:
    if nvml_handle is None:
        return None
    return nvml.snapshot_of(*nvml_handle)


def distributed_config(world_size: int, timeout_s: float = DISTRIBUTED_TIMEOUT_S,
                       **overrides: Any) -> dict[str, Any]:
    """The training launcher's config for the check's NCCL part (its keys are the probe's)."""
    return {"world_size": world_size, "repetitions": REPETITIONS, "timeout_s": timeout_s,
            "dataloader_samples": 0, "seed": 0, "training_model": "mlp"} | DDP | overrides


def measure_distributed(config: dict[str, Any]) -> dict[str, Any]:
    """The training probe's DDP and all-reduce phase, as it runs it, with its samples."""
    from benchmarks.probes.training_samples import distributed_samples

    result: dict[str, Any] = isolated.call("benchmarks.probes.training:launch_ranks", config,
                                           float(config["timeout_s"]),
                                           what="the NCCL all-reduce and DDP steps")
    samples = distributed_samples(result)
    return {"result": result, "samples": {s.metric: s.as_dict() for s in samples}}


# --- collecting ---


def collect(config: dict[str, Any] | None = None) -> dict[str, Any]:
    """Inventory, per-GPU figures and the NCCL part; a part that fails says why in place."""
    config = config or {}
    start = time.monotonic()
    found: dict[str, Any] = {"inventory": nvml.inventory(), "config": config}
    if not found["inventory"].get("available"):
        return found
    # CUDA numbers devices fastest first unless told otherwise; NVML by PCI bus.
    os.environ.setdefault("CUDA_DEVICE_ORDER", "PCI_BUS_ID")
    try:
        found["devices"] = isolated.call("benchmarks.gpu_check:measure_devices", config,
                                         DEVICES_TIMEOUT_S, what="the per-GPU measurement")
    except ProbeError as exc:
        found["devices"] = {"error": str(exc)}
    gpus = len(found["inventory"]["devices"])
    try:
        found["distributed"] = measure_distributed(distributed_config(gpus))
    except ProbeError as exc:
        found["distributed"] = {"error": str(exc)}
    found["elapsed_s"] = round(time.monotonic() - start, 1)
    return found


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="gpu-check", description=(
        "Every GPU path of the suite on this host, each figure beside the published one for "
        "the GPU model (contract/data/gpu_models.yaml)."))
    parser.add_argument("--json", metavar="FILE", help="also write everything measured here")
    parser.add_argument("--sizes", default=",".join(str(n) for n in SIZES),
                        help="matmul sizes n (n x n x n), comma-separated (default: %(default)s)")
    args = parser.parse_args(argv)
    config = {"sizes": [int(n) for n in args.sizes.split(",") if n]}
    found = collect(config)
    lines = report(found)
    print(render(lines), flush=True)
    if args.json:
        with open(args.json, "w") as fh:
            json.dump(found | {"report": [asdict(line) for line in lines]}, fh, indent=1)
    return 1 if any(line.low for line in lines) else 0


if __name__ == "__main__":
    sys.exit(main())
