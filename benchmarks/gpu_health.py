"""The board's health in `make gpu-check`: one rule per function, each a fault of the board a
buyer should hear of (uncorrected ECC errors, remapped rows, retired pages, NVLink links
down, a lowered power limit), from the NVML inventory of one GPU."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from benchmarks.gpu_lines import Line
from contract import rules
from contract.gpu_models import GpuModel

# What a board may show, each with its why and source.
BOUNDS = {name: b.value for name, b in rules.load_bounds(
    Path(rules.__file__).resolve().parent / "data" / "gpu_health.yaml").items()}


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
    if max(volatile, aggregate) <= BOUNDS["uncorrected_ecc_errors"]:
        return None
    return Line(f"  uncorrected ECC errors: {volatile} since the driver loaded, {aggregate} in "
                "the board's life", mark="FIX",
                look=["the board's memory: ask the provider to reset (nvidia-smi -r) or replace "
                      "it; a job on it can die with an Xid 48/63/64"])


def row_remapping(board: dict[str, Any], _: GpuModel | None) -> Line | None:
    rows = board.get("remapped_rows")
    if not rows or max(int(rows["pending"]), int(rows["failed"])) <= BOUNDS["remapped_rows_pending"]:
        return None
    if rows["failed"]:
        return Line("  row remapping failed", mark="FIX",
                    look=["the board has run out of spare memory rows: it needs replacing"])
    return Line(f"  a memory row remap is pending ({rows['uncorrectable']} uncorrectable rows)",
                mark="FIX", look=["reset the GPU (nvidia-smi -r, or reboot) to apply the remap"])


def retired_pages(board: dict[str, Any], _: GpuModel | None) -> Line | None:
    if int(board.get("retired_pages_pending") or 0) <= BOUNDS["retired_pages_pending"]:
        return None
    return Line(f"  page retirement pending ({board.get('retired_pages')} pages retired)",
                mark="FIX", look=["reboot or reset the GPU so that the pages are retired"])


def nvlink_down(board: dict[str, Any], model: GpuModel | None) -> Line | None:
    if len(board.get("nvlink_down") or []) > BOUNDS["nvlink_links_down"]:
        return Line(f"  NVLink links down: {board['nvlink_down']}", mark="FIX",
                    look=["nvidia-smi nvlink -s; on NVSwitch boards, nvidia-fabricmanager"])
    if model and model.nvlink_gbs and not model.nvlink_bridge and not board.get("nvlink_links") \
            and "nvlink" not in board.get("not_supported", []):
        return Line("  NVLink not reported on an NVLink board", mark="FIX",
                    look=["nvidia-smi nvlink -s; nvidia-fabricmanager on NVSwitch boards"])
    return None


def power_limit_lowered(board: dict[str, Any], _: GpuModel | None) -> Line | None:
    limit, default = board.get("power_limit_w"), board.get("power_default_limit_w")
    if not limit or not default or limit >= BOUNDS["power_limit_share"] * default:
        return None
    return Line(f"  power limit {limit:g} W, below the board's default {default:g} W", mark="FIX",
                look=["the provider lowered it (nvidia-smi -pl): matmul runs slower"])


