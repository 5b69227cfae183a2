"""Published figures per GPU model (contract/data/gpu_models.yaml), by NVML device name."""

from __future__ import annotations

import re
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path
from typing import Any

import yaml

TABLE = Path(__file__).resolve().parent / "data" / "gpu_models.yaml"


@dataclass(frozen=True)
class GpuModel:
    name: str
    fp32: float  # TFLOP/s, dense
    tf32: float
    bf16: float
    fp16: float
    memory_gbs: float
    source: str
    nvlink_gbs: float = 0.0  # both directions, as datasheets state it; 0: none
    nvlink_bridge: bool = False  # a PCIe card: NVLink only with the optional bridge
    pcie_gen: int | None = None
    pcie_lanes: int | None = None
    idle_w: float = 0.0
    matmul_attainable: float | None = None  # measured bf16 matmul / bf16 peak, where published
    attainable_source: str = ""
    match: tuple[str, ...] = ()

    def peak(self, precision: str) -> float:
        """Dense TFLOP/s for "fp32", "tf32", "bf16" or "fp16"."""
        return float(getattr(self, precision))

    def pcie_gbs(self) -> float | None:
        """One direction of the board's host link, GB/s (None for a CPU)."""
        if self.pcie_gen is None or self.pcie_lanes is None:
            return None
        return pcie_gbs(self.pcie_gen, self.pcie_lanes)


def _model(row: dict[str, Any]) -> GpuModel:
    def optional(key: str, kind: type) -> Any:
        return kind(row[key]) if row.get(key) is not None else None

    return GpuModel(name=str(row["name"]), fp32=float(row["fp32"]), tf32=float(row["tf32"]),
                    bf16=float(row["bf16"]), fp16=float(row["fp16"]),
                    memory_gbs=float(row["memory_gbs"]), source=str(row["source"]),
                    nvlink_gbs=float(row.get("nvlink_gbs", 0.0)),
                    nvlink_bridge=bool(row.get("nvlink_bridge", False)),
                    pcie_gen=optional("pcie_gen", int), pcie_lanes=optional("pcie_lanes", int),
                    idle_w=float(row.get("idle_w", 0.0)),
                    matmul_attainable=optional("matmul_attainable", float),
                    attainable_source=str(row.get("attainable_source", "")),
                    match=tuple(str(m).lower() for m in row.get("match", ())))


@dataclass(frozen=True)
class Table:
    models: list[GpuModel]
    cpu: GpuModel
    pcie_lane_gbs: dict[int, float]
    pcie_source: str
    check: dict[str, float]


@lru_cache(maxsize=1)
def load() -> Table:
    data = yaml.safe_load(TABLE.read_text())
    return Table(models=[_model(row) for row in data["models"]], cpu=_model(data["cpu"]),
                 pcie_lane_gbs={int(k): float(v) for k, v in data["pcie_lane_gbs"].items()},
                 pcie_source=str(data["pcie_source"]),
                 check={str(k): float(v) for k, v in data["check"].items()})


def table() -> tuple[list[GpuModel], GpuModel]:
    return load().models, load().cpu


def _matches(pattern: str, name: str) -> bool:
    # Whole words: "h20" is not in "nvidia h200", "l40" is not in "nvidia l40s".
    return re.search(rf"(?<![0-9a-z]){re.escape(pattern)}(?![0-9a-z])", name) is not None


def lookup(device_name: str) -> GpuModel | None:
    """The first model one of whose match strings is a word of the NVML device name; None
    for a model the table does not list."""
    name = device_name.lower()
    return next((m for m in load().models if any(_matches(s, name) for s in m.match)), None)


def cpu() -> GpuModel:
    return load().cpu


def pcie_gbs(generation: int, lanes: int) -> float:
    """One direction of a PCIe link, GB/s; 0 for a generation the table does not know."""
    return load().pcie_lane_gbs.get(generation, 0.0) * lanes


def check_threshold(name: str) -> float:
    """gpu-check's verdict threshold ``name`` (the table's ``check`` section)."""
    return load().check[name]
