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
4. The report (``report``, a pure function of the results and contract/data/gpu_models.yaml):
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
from dataclasses import asdict, dataclass, field
from typing import Any

from benchmarks import nvml
from benchmarks.probes import isolated
from benchmarks.probes.base import ProbeError
from contract import gpu_models
from contract.gpu_models import GpuModel

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
NO_GPU_MESSAGE = "no NVIDIA GPU"


# --- measuring (in child processes) ---


def measure_devices(config: dict[str, Any]) -> dict[str, Any]:
    """In a child: every GPU's figures (``config["device"] == "cpu"`` measures the CPU once,
    for the tests of a host without a GPU: no host copies, no NVML)."""
    import torch

    from benchmarks.probes import gpu

    cuda = config.get("device") != "cpu" and torch.cuda.is_available()
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


# --- the report (pure) ---


@dataclass
class Line:
    text: str
    # LOW: a figure under its threshold; FIX: a fault of the board; FAIL: a part that did
    # not run. Any of them makes the check exit 1.
    mark: str = ""
    look: list[str] = field(default_factory=list)  # what to look at

    @property
    def low(self) -> bool:
        return bool(self.mark)


def ratio(value: float, reference: float | None) -> float | None:
    return value / reference if reference else None


def report(found: dict[str, Any]) -> list[Line]:
    """The check's lines from what ``collect`` found."""
    inventory = found["inventory"]
    if not inventory.get("available"):
        return [Line(no_gpu_message(inventory.get("reason", "")))]
    lines = [Line(header(found))]
    devices = {d["index"]: d for d in inventory["devices"]}
    measured = found.get("devices", {})
    if "error" in measured:
        lines.append(Line(f"per-GPU measurement failed: {measured['error']}", "FAIL"))
    by_nvml = {m["index"] if m.get("nvml_index") is None else m["nvml_index"]: m
               for m in measured.get("devices", [])}
    for index, board in devices.items():
        model = gpu_models.lookup(board["name"])
        lines.append(Line(board_line(board, model)))
        lines += health(board, model)
        if model is None:
            lines.append(Line(f"  {board['name']} is not in contract/data/gpu_models.yaml: its "
                              "figures have no reference (and intake refuses them)", mark="FIX"))
        if index in by_nvml:
            lines += device_lines(by_nvml[index], board, model)
    lines += distributed_lines(found.get("distributed"), inventory, measured)
    if "elapsed_s" in found:
        lines.append(Line(f"done in {found['elapsed_s']:g} s"))
    return lines


def no_gpu_message(reason: str) -> str:
    detail = reason.removeprefix(nvml.NO_GPU).strip()
    if detail:
        return f"{NO_GPU_MESSAGE} {detail}: nothing to check"
    return f"{NO_GPU_MESSAGE}: nothing to check (the GPU probes report skipped)"


def header(found: dict[str, Any]) -> str:
    inventory, measured = found["inventory"], found.get("devices", {})
    cuda = inventory.get("cuda_driver")
    parts = [f"{len(inventory['devices'])} GPU(s)", f"driver {inventory.get('driver')}",
             f"CUDA driver {cuda // 1000}.{cuda % 1000 // 10}" if cuda else "CUDA driver ?"]
    if measured.get("torch"):
        parts.append(f"torch {measured['torch']} (CUDA {measured.get('cuda')}, "
                     f"NCCL {measured.get('nccl')})")
    return "GPU check: " + ", ".join(parts)


def board_line(board: dict[str, Any], model: GpuModel | None) -> str:
    gib = f"{board['memory_bytes'] / (1 << 30):.0f} GiB" if board.get("memory_bytes") else "? GiB"
    pcie = (f"PCIe Gen{board.get('pcie_gen')} x{board.get('pcie_width')} now, "
            f"Gen{board.get('pcie_gen_max')} x{board.get('pcie_width_max')} max"
            if board.get("pcie_gen_max") is not None else "PCIe: not reported")
    nvlink = (f"NVLink {board['nvlinks']}/{board['nvlink_links']} up"
              if board.get("nvlink_links") else "no NVLink")
    ecc = {True: "ECC on", False: "ECC off", None: "ECC not supported"}[board.get("ecc_enabled")]
    clocks = (f"SM max {board['sm_clock_max_mhz']} MHz" if board.get("sm_clock_max_mhz")
              else "clocks not reported")
    power = (f"power limit {board['power_limit_w']:g} W" if board.get("power_limit_w")
             else "power limit not reported")
    reference = f" [{model.name}: {model.source}]" if model else ""
    return (f"GPU {board['index']}: {board['name']}, {gib}, {pcie}, {nvlink}, {ecc}, {clocks}, "
            f"{power}{reference}")


# One rule per function, each a fault of the board the buyer should hear of.


def health(board: dict[str, Any], model: GpuModel | None) -> list[Line]:
    lines = []
    for rule in (ecc_errors, row_remapping, retired_pages, nvlink_down, power_limit_lowered):
        found = rule(board, model)
        if found is not None:
            lines.append(found)
    return lines


def ecc_errors(board: dict[str, Any], _: GpuModel | None) -> Line | None:
    volatile = board.get("ecc_uncorrected_volatile") or 0
    aggregate = board.get("ecc_uncorrected_aggregate") or 0
    if not volatile and not aggregate:
        return None
    return Line(f"  uncorrected ECC errors: {volatile} since the driver loaded, {aggregate} in "
                "the board's life", mark="FIX",
                look=["the board's memory: ask the provider to reset (nvidia-smi -r) or replace "
                      "it; a job on it can die with an Xid 48/63/64"])


def row_remapping(board: dict[str, Any], _: GpuModel | None) -> Line | None:
    rows = board.get("remapped_rows")
    if not rows or not (rows["pending"] or rows["failed"]):
        return None
    if rows["failed"]:
        return Line("  row remapping failed", mark="FIX",
                    look=["the board has run out of spare memory rows: it needs replacing"])
    return Line(f"  a memory row remap is pending ({rows['uncorrectable']} uncorrectable rows)",
                mark="FIX", look=["reset the GPU (nvidia-smi -r, or reboot) to apply the remap"])


def retired_pages(board: dict[str, Any], _: GpuModel | None) -> Line | None:
    if not board.get("retired_pages_pending"):
        return None
    return Line(f"  page retirement pending ({board.get('retired_pages')} pages retired)",
                mark="FIX", look=["reboot or reset the GPU so that the pages are retired"])


def nvlink_down(board: dict[str, Any], model: GpuModel | None) -> Line | None:
    if board.get("nvlink_down"):
        return Line(f"  NVLink links down: {board['nvlink_down']}", mark="FIX",
                    look=["nvidia-smi nvlink -s; on NVSwitch boards, nvidia-fabricmanager"])
    if model and model.nvlink_gbs and not model.nvlink_bridge and not board.get("nvlink_links") \
            and "nvlink" not in board.get("not_supported", []):
        return Line("  NVLink not reported on an NVLink board", mark="FIX",
                    look=["nvidia-smi nvlink -s; nvidia-fabricmanager on NVSwitch boards"])
    return None


def power_limit_lowered(board: dict[str, Any], _: GpuModel | None) -> Line | None:
    limit, default = board.get("power_limit_w"), board.get("power_default_limit_w")
    if not limit or not default or limit >= 0.95 * default:
        return None
    return Line(f"  power limit {limit:g} W, below the board's default {default:g} W", mark="FIX",
                look=["the provider lowered it (nvidia-smi -pl): matmul runs slower"])


def device_lines(measured: dict[str, Any], board: dict[str, Any],
                 model: GpuModel | None) -> list[Line]:
    if "skipped" in measured or "failed" in measured:
        return [Line(f"  {measured.get('skipped') or 'failed: ' + measured['failed']}", "FAIL")]
    lines = []
    largest = max(m["n"] for m in measured["matmul"])
    for m in measured["matmul"]:
        lines.append(matmul_line(m, model, measured.get("after_matmul"), board,
                                 judged=m["n"] == largest))
    lines.append(memory_line(measured["memory"], model, measured.get("after_matmul")))
    for key, what in (("host_to_device", "host to device"), ("device_to_host", "device to host")):
        if key in measured:
            lines.append(host_copy_line(measured[key], what, model, board,
                                        measured.get("after_host_copy")))
    if isinstance(measured.get("nvml"), dict):
        util = measured["nvml"]
        power = f", power {util['power_mean_w']:.0f} W" if util.get("power_mean_w") else ""
        lines.append(Line(f"  NVML through it: utilisation {util['util_mean']:.0f}% mean{power}"))
    snap = measured.get("after_matmul")
    if snap:
        lines.append(Line("  after matmul: " + snapshot_text(snap, board)))
    return lines


def verdict(fraction: float | None, threshold: float) -> bool:
    return fraction is not None and fraction < threshold


def matmul_line(m: dict[str, Any], model: GpuModel | None, snap: dict[str, Any] | None,
                board: dict[str, Any], judged: bool) -> Line:
    peak = model.peak(m["precision"]) if model else None
    fraction = ratio(m["median"], peak)
    text = f"  matmul {m['precision']:<4} n={m['n']:<5} {m['median']:8.1f} TFLOP/s"
    if fraction is None:
        return Line(text)
    text += f"  {fraction:.2f} of {peak:g}"
    attainable = model.matmul_attainable if model and m["precision"] == "bf16" else None
    if attainable:
        of_attainable = fraction / attainable
        text += f" ({of_attainable:.2f} of the {attainable:.3g} measured attainable)"
        low = judged and verdict(of_attainable, gpu_models.check_threshold("matmul_vs_attainable"))
    else:
        low = judged and verdict(fraction, gpu_models.check_threshold("matmul_vs_peak"))
    return Line(text, "LOW" if low else "", clock_hints(snap, board) if low else [])


def memory_line(m: dict[str, Any], model: GpuModel | None, snap: dict[str, Any] | None) -> Line:
    fraction = ratio(m["median"], model.memory_gbs if model else None)
    text = f"  memory copy {m['mib']} MiB {m['median']:8.1f} GB/s"
    if fraction is None:
        return Line(text)
    low = verdict(fraction, gpu_models.check_threshold("memory"))
    look = []
    if low:
        look = ["another process on the GPU (nvidia-smi), MIG mode, or memory clocks held "
                "down" + (f" ({snap.get('mem_clock_mhz')} MHz after load)" if snap else "")]
    return Line(f"{text}  {fraction:.2f} of {model.memory_gbs:g}" if model else text,
                "LOW" if low else "", look)


def host_copy_line(m: dict[str, Any], what: str, model: GpuModel | None, board: dict[str, Any],
                   snap: dict[str, Any] | None) -> Line:
    reference = model.pcie_gbs() if model else None
    fraction = ratio(m["median"], reference)
    text = f"  {what} (pinned) {m['median']:8.1f} GB/s"
    if fraction is None or model is None:
        return Line(text)
    text += f"  {fraction:.2f} of PCIe Gen{model.pcie_gen} x{model.pcie_lanes} {reference:.1f}"
    low = verdict(fraction, gpu_models.check_threshold("host_copy"))
    return Line(text, "LOW" if low else "", pcie_hints(board, model, snap) if low else [])


def clock_hints(snap: dict[str, Any] | None, board: dict[str, Any]) -> list[str]:
    if not snap:
        return ["clocks unknown (NVML gave no snapshot): nvidia-smi -q -d CLOCK,PERFORMANCE"]
    hints = []
    sm, top = snap.get("sm_clock_mhz"), board.get("sm_clock_max_mhz")
    if sm and top and sm < 0.9 * top:
        hints.append(f"SM clock {sm} MHz under load, of {top} MHz max")
    reasons = [r for r in snap.get("clock_event_reasons") or [] if r != "gpu_idle"]
    if reasons:
        hints.append("clocks held back by: " + ", ".join(reasons) + " (thermal: the cooling; "
                     "power: the power limit and the supply)")
    if snap.get("temperature_c") and snap["temperature_c"] >= 85:
        hints.append(f"{snap['temperature_c']} C under load: the cooling")
    return hints or ["another process on the GPU (nvidia-smi), MIG mode, or a torch whose "
                     "CUDA/cuBLAS is older than the GPU"]


def pcie_hints(board: dict[str, Any], model: GpuModel, snap: dict[str, Any] | None) -> list[str]:
    gen = (snap or {}).get("pcie_gen") or board.get("pcie_gen")
    width = (snap or {}).get("pcie_width") or board.get("pcie_width")
    hints = []
    if gen and width and (gen < (model.pcie_gen or 0) or width < (model.pcie_lanes or 0)):
        hints.append(f"PCIe running at Gen{gen} x{width} under load; the board is "
                     f"Gen{model.pcie_gen} x{model.pcie_lanes}: the slot, a riser, the BIOS's "
                     "PCIe setting")
    gpu_max, link_max = board.get("pcie_gen_gpu_max"), board.get("pcie_gen_max")
    if gpu_max and link_max and link_max < gpu_max:
        hints.append(f"the slot holds the link at Gen{link_max} (the GPU can do Gen{gpu_max})")
    return hints or ["the host memory on the far CPU socket (run under numactl "
                     "--cpunodebind of the GPU's node), the IOMMU, or a PCIe switch shared "
                     "with NICs"]


def snapshot_text(snap: dict[str, Any], board: dict[str, Any]) -> str:
    parts = []
    if snap.get("sm_clock_mhz") is not None:
        parts.append(f"SM {snap['sm_clock_mhz']} of {board.get('sm_clock_max_mhz')} MHz")
    if snap.get("power_w") is not None:
        limit = board.get("power_limit_w")
        parts.append(f"{snap['power_w']:.0f} W" + (f" of {limit:g} W" if limit else ""))
    if snap.get("temperature_c") is not None:
        parts.append(f"{snap['temperature_c']} C")
    reasons = [r for r in snap.get("clock_event_reasons") or [] if r != "gpu_idle"]
    parts.append("clocks held back by " + ", ".join(reasons) if reasons else "no clock limits")
    if snap.get("pcie_gen") is not None:
        parts.append(f"PCIe Gen{snap['pcie_gen']} x{snap.get('pcie_width')}")
    return ", ".join(parts)


def busbw_reference(inventory: dict[str, Any]) -> tuple[float | None, str]:
    boards = inventory["devices"]
    model = gpu_models.lookup(boards[0]["name"]) if boards else None
    if model is None:
        return None, "no reference"
    if model.nvlink_gbs and all(b.get("nvlinks") for b in boards):
        return model.nvlink_gbs / 2, f"NVLink one direction {model.nvlink_gbs / 2:g}"
    pcie = model.pcie_gbs()
    return pcie, f"PCIe Gen{model.pcie_gen} x{model.pcie_lanes} one direction {pcie or 0:.1f}"


def distributed_lines(distributed: dict[str, Any] | None, inventory: dict[str, Any],
                      measured: dict[str, Any]) -> list[Line]:
    if distributed is None:
        return []
    if "error" in distributed:
        return [Line(f"NCCL all-reduce and DDP failed: {distributed['error']}", "FAIL",
                     look=["NCCL_DEBUG=INFO shows where NCCL stopped"])]
    result, samples = distributed["result"], distributed["samples"]
    world, backend = result["world_size"], result.get("backend")
    lines = []
    if result.get("comm_skipped"):
        lines.append(Line("NCCL all-reduce: one GPU on this host, nothing to reduce across "
                          "(the busbw curve needs two or more)"))
    else:
        busbw = samples["training.allreduce_busbw"]
        curve = busbw["metadata"]["curve"]
        points = ", ".join(f"{c['size_mib']} MiB {c['busbw_gbs']:.1f}" for c in curve)
        reference, what = busbw_reference(inventory)
        fraction = ratio(busbw["value"], reference)
        # What NCCL says it used, where the training probe read it from NCCL's log.
        over = f" over {result['transport']}" if result.get("transport") else ""
        text = (f"{backend} all-reduce{over}, {world} GPUs, busbw GB/s: {points}; "
                f"peak {busbw['value']:.1f}")
        low = verdict(fraction, gpu_models.check_threshold("busbw"))
        if fraction is not None:
            text += f"  {fraction:.2f} of {what}"
        look = busbw_hints(inventory) if low else []
        lines.append(Line(text, "LOW" if low else "", look))
    step = samples["training.step_time"]
    text = (f"DDP on {backend}, {world} rank(s), MLP of {result.get('model_params', 0) / 1e6:.0f}M "
            f"parameters: step {step['value']:.1f} ms, compute "
            f"{samples['training.compute_time']['value']:.1f} ms")
    if "training.comm_share" in samples:
        text += f", comm share {samples['training.comm_share']['value']:.2f}"
    lines.append(Line(text))
    util = samples.get("training.gpu_util_mean")
    if util:
        power = samples.get("training.gpu_power_mean")
        lines.append(Line(f"  NVML through the DDP steps: utilisation {util['value']:.0f}% mean"
                          + (f", power {power['value']:.0f} W mean" if power else "")
                          + ("  (a small model's steps leave GPUs idle between kernels: "
                             "informational)" if util["value"] < gpu_models.check_threshold(
                                 "gpu_util") else "")))
    elif isinstance(result.get("gpu_utilization"), str):
        lines.append(Line(f"  NVML through the DDP steps: {result['gpu_utilization']}"))
    return lines


def busbw_hints(inventory: dict[str, Any]) -> list[str]:
    boards = inventory["devices"]
    model = gpu_models.lookup(boards[0]["name"]) if boards else None
    if model and model.nvlink_gbs and not all(b.get("nvlinks") for b in boards):
        if model.nvlink_bridge:
            return ["no NVLink bridge: the all-reduce crosses PCIe (the reference is PCIe)"]
        return ["NVLink is not up on every GPU: nvidia-smi nvlink -s, nvidia-fabricmanager"]
    return ["the transport NCCL chose (NCCL_DEBUG=INFO: P2P/CUMEM or SHM), NCCL_P2P_DISABLE, "
            "PCIe ACS on the switches, the IOMMU; nvidia-smi topo -m shows the paths"]


def render(lines: list[Line]) -> str:
    out = []
    for line in lines:
        out.append(f"{line.text}  <- {line.mark}" if line.mark else line.text)
        indent = " " * (len(line.text) - len(line.text.lstrip()) + 4)
        out += [f"{indent}look at: {hint}" for hint in line.look]
    return "\n".join(out)


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
