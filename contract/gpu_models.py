"""Published peak figures per GPU model (contract/data/gpu_models.yaml), by NVML name."""

from __future__ import annotations

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
    memory_gbs: float
    source: str
    idle_w: float = 0.0
    match: tuple[str, ...] = ()


def _model(row: dict[str, Any]) -> GpuModel:
    return GpuModel(name=str(row["name"]), fp32=float(row["fp32"]), tf32=float(row["tf32"]),
                    bf16=float(row["bf16"]), memory_gbs=float(row["memory_gbs"]),
                    source=str(row["source"]), idle_w=float(row.get("idle_w", 0.0)),
                    match=tuple(str(m).lower() for m in row.get("match", ())))


@lru_cache(maxsize=1)
def table() -> tuple[list[GpuModel], GpuModel]:
    data = yaml.safe_load(TABLE.read_text())
    return [_model(row) for row in data["models"]], _model(data["cpu"])


def lookup(device_name: str) -> GpuModel | None:
    """The first model whose match string is in the NVML device name; None if unknown."""
    name = device_name.lower()
    return next((m for m in table()[0] if any(s in name for s in m.match)), None)


def cpu() -> GpuModel:
    return table()[1]
