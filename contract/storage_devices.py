"""The IOPS a host's block devices can serve at most (contract/data/storage_devices.yaml)."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path
from typing import Any

import yaml

TABLE = Path(__file__).resolve().parent / "data" / "storage_devices.yaml"


@dataclass(frozen=True)
class DeviceClass:
    name: str
    names: tuple[str, ...]
    iops: int
    source: str


@lru_cache(maxsize=1)
def load() -> tuple[DeviceClass, ...]:
    rows = yaml.safe_load(TABLE.read_text())["classes"]
    return tuple(DeviceClass(r["class"], tuple(r["names"]), int(r["iops"]), r["source"])
                 for r in rows)


def device_class(disk: dict[str, Any]) -> DeviceClass:
    """The class of one block device as the inventory lists it, by its kernel name."""
    name = str(disk.get("name", ""))
    return next((row for row in load() if any(name.startswith(p) for p in row.names)),
                load()[-1])


def max_iops(disks: Iterable[dict[str, Any]]) -> int | None:
    """The most 4 KiB random reads a second these devices serve together (every one read at
    its class's best, as a RAID 0 across all of them would); None when none is listed."""
    found = [device_class(d).iops for d in disks if isinstance(d, dict)]
    return sum(found) if found else None
