"""Steps for tests/benchmarks/test_isolated.py to run in a child process (imported there by name).

Kept apart from the test module so that the child imports no pytest and starts quickly.
"""

from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

from benchmarks.probes.base import ProbeError

# What the hung step's own child runs, for pgrep; as a DDP rank would be, it is in the
# step's process group.
GRANDCHILD = "sleep 43.75"


def echo(config: dict[str, Any]) -> dict[str, Any]:
    return {"config": config, "pid": os.getpid()}


def hang(config: dict[str, Any]) -> None:
    """Like a kernel that never returns, with a process of its own started first."""
    subprocess.Popen(["sh", "-c", f"exec {GRANDCHILD}"])
    Path(config["started"]).write_text("started")
    time.sleep(60)


def crash(config: dict[str, Any]) -> None:
    print("allocating 80 GiB on cuda:0", file=sys.stderr, flush=True)
    raise RuntimeError("CUDA error: an illegal memory access was encountered")


def refuse(config: dict[str, Any]) -> None:
    raise ProbeError("the data loader returned 3 records, expected 4")
