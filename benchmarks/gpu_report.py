"""`make gpu-check`'s report, a pure function of what it measured and
contract/data/gpu_models.yaml: each figure as a fraction of the model's published one,
``LOW`` under the table's ``check`` thresholds with what to look at, the board's health
(benchmarks.gpu_health), and the NCCL and DDP lines."""

from __future__ import annotations

from typing import Any

from benchmarks import nvml
from benchmarks.gpu_health import health
from benchmarks.gpu_lines import Line
from contract import gpu_models
from contract.gpu_models import GpuModel

NO_GPU_MESSAGE = "no NVIDIA GPU"


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
