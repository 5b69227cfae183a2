"""What this host is: CPU, memory, kernel, tool and library versions, GPUs through NVML,
RDMA devices (InfiniBand, RoCE) and GPUDirect RDMA support.

Stored with every result so that two numbers are only compared when measured alike.
"""

from __future__ import annotations

import os
import platform
import shutil
import socket
from functools import lru_cache
from pathlib import Path
from typing import Any

from benchmarks import nvml, runner
from benchmarks.parsers import rdma as rdma_parser

TOOL_VERSION_ARGS = {"ping": ["-V"], "iperf3": ["--version"], "fio": ["--version"],
                     "tracepath": ["-V"]}


def _tool_version(tool: str) -> str | None:
    if shutil.which(tool) is None:
        return None
    try:
        out = runner.run([tool, *TOOL_VERSION_ARGS[tool]], timeout=5)
    except runner.CommandTimeout:
        return None
    first = (out.stdout or out.stderr).strip().splitlines()
    return first[0] if first else None


def _cpu_model() -> str:
    try:
        with open("/proc/cpuinfo") as fh:
            for line in fh:
                if line.startswith("model name"):
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or "unknown"


def _memory_bytes() -> int | None:
    try:
        with open("/proc/meminfo") as fh:
            for line in fh:
                if line.startswith("MemTotal:"):
                    return int(line.split()[1]) * 1024
    except OSError:
        pass
    return None


def nics() -> list[dict[str, Any]]:
    """Network interfaces with their link speed (Mbit/s; None where the driver has none)."""
    found = []
    for dev in sorted(Path("/sys/class/net").glob("*")):
        try:
            speed: int | None = int((dev / "speed").read_text().strip())
        except (OSError, ValueError):
            speed = None
        try:
            mac = (dev / "address").read_text().strip()
        except OSError:
            mac = ""
        found.append({"name": dev.name, "speed_mbps": speed if speed and speed > 0 else None,
                      "mac": mac})
    return found


def machine_id() -> str:
    """/etc/machine-id: part of the host's identity (fleet.services.identity)."""
    try:
        return Path("/etc/machine-id").read_text().strip()[:64]
    except OSError:
        return ""


def disks() -> list[dict[str, Any]]:
    """Block devices (no loop, RAM or device-mapper): size, spinning or not, model."""
    found = []
    for dev in sorted(Path("/sys/block").glob("*")):
        if dev.name.startswith(("loop", "ram", "dm-", "zram", "sr")):
            continue
        try:
            size = int((dev / "size").read_text().strip()) * 512  # in 512-byte sectors, always
            rotational = (dev / "queue" / "rotational").read_text().strip() == "1"
        except (OSError, ValueError):
            continue
        try:
            model = (dev / "device" / "model").read_text().strip()
        except OSError:
            model = ""
        found.append({"name": dev.name, "size_bytes": size, "rotational": rotational, "model": model})
    return found


# A lab host stands for a GPU node it cannot have (lab/specs: a host's ``gpu``): the model
# it stands for, named in its inventory as declared, so that the platform estimates it on
# that model's datasheet (labelled so) instead of on its CPU.
LAB_GPU = "BENCH_LAB_GPU"


def gpus() -> dict[str, Any]:
    """GPU inventory through NVML (benchmarks.nvml: one guarded reader); says why when none.
    Without NVML's GPUs, a lab host's declared model: ``declared``, with no device facts."""
    found = nvml.inventory()
    model = os.environ.get(LAB_GPU, "").strip()[:96]
    if found.get("available") or not model:
        return found
    return {"available": True, "declared": True, "devices": [{"index": 0, "name": model}],
            "reason": f"declared by {LAB_GPU}, not seen by NVML: {found.get('reason', '')}"}


def rdma(root: Path = Path("/")) -> dict[str, Any]:
    """RDMA devices and their ports from /sys, with ``rdma link`` where iproute2 has it."""
    text: str | None = None
    if shutil.which("rdma") is not None:
        try:
            out = runner.run(["rdma", "link", "show"], timeout=5)
            text = out.stdout + out.stderr
        except (runner.CommandTimeout, runner.CommandNotFound) as exc:
            text = f"rdma link show: {exc}"
    return rdma_parser.inventory(root, text)


@lru_cache(maxsize=1)
def collect() -> dict[str, Any]:
    return {
        "hostname": socket.gethostname(),
        "machine_id": machine_id(),
        "cpu_model": _cpu_model(),
        "cpu_cores": os.cpu_count(),
        "memory_bytes": _memory_bytes(),
        "kernel": platform.release(),
        "python": platform.python_version(),
        "tools": {tool: _tool_version(tool) for tool in TOOL_VERSION_ARGS},
        "nics": nics(),
        "disks": disks(),
        "gpu": gpus(),
        "rdma": rdma(),
    }
