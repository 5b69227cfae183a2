"""A probe's torch step, run in a child process held to the probe's time limit.

A CUDA kernel that hangs cannot be interrupted from Python, and the memory torch caches on
a device belongs to the process that allocated it: in the long-lived worker either would
outlast the probe. In a child started through ``benchmarks.runner`` the child leads its own
process group, so a timeout or the probe's time limit kills it (and whatever it spawned)
whole, and its device memory is freed when it exits, whichever way the step ends.

The step crosses as JSON: the parent writes the config to a file, the child imports
``module:function``, calls it with the config and writes what it returns to another file.
"""

from __future__ import annotations

import importlib
import json
import os
import sys
import tempfile
from pathlib import Path
from typing import Any

from benchmarks import runner
from benchmarks.probes.base import ProbeError

PROJECT_ROOT = Path(__file__).resolve().parents[2]
CHILD_CODE = "from benchmarks.probes.isolated import child_main; child_main()"
# Enough of a traceback to name the error and where it was raised.
STDERR_TAIL_CHARS = 2000


def call(function: str, config: dict[str, Any], timeout: float, what: str) -> Any:
    """``function`` ("package.module:name") called with ``config`` in a child; its result.

    Raises ProbeError naming ``what`` when the child fails (with its stderr tail) or runs
    past ``timeout``, ProbeTimeLimit when the probe's time limit ends first, and the
    ProbeError the function itself raised, with its message, when it raised one.
    """
    with tempfile.TemporaryDirectory(prefix="bench-isolated-") as tmp:
        config_path = os.path.join(tmp, "config.json")
        result_path = os.path.join(tmp, "result.json")
        with open(config_path, "w") as fh:
            json.dump(config, fh)
        argv = [sys.executable, "-c", CHILD_CODE, function, config_path, result_path]
        try:
            result = runner.run(argv, timeout=timeout, env=child_env())
        except runner.CommandTimeout as exc:
            raise ProbeError(f"{what} timed out after {exc.timeout:g} s; "
                             "its processes were killed") from None
        if result.returncode != 0 or not os.path.exists(result_path):
            tail = (result.stderr or result.stdout).strip()[-STDERR_TAIL_CHARS:]
            raise ProbeError(f"{what} failed (exit {result.returncode}): {tail}")
        with open(result_path) as fh:
            outcome: dict[str, Any] = json.load(fh)
    if "error" in outcome:
        raise ProbeError(str(outcome["error"]))
    return outcome["result"]


def child_env() -> dict[str, str]:
    env = dict(os.environ)
    # The child (and any process it spawns, such as DDP ranks) imports this package by
    # name, whatever directory the worker was started from.
    env["PYTHONPATH"] = os.pathsep.join(
        p for p in (str(PROJECT_ROOT), env.get("PYTHONPATH", "")) if p)
    return env


def child_main() -> None:
    """The child's entry point: argv is the function, the config file, the result file."""
    function, config_path, result_path = sys.argv[1:4]
    module_name, _, name = function.partition(":")
    target = getattr(importlib.import_module(module_name), name)
    with open(config_path) as fh:
        config = json.load(fh)
    try:
        outcome: dict[str, Any] = {"result": target(config)}
    except ProbeError as exc:
        # A measurement that could not be made says why in the probe's own words; any
        # other exception exits non-zero and its traceback reaches the parent via stderr.
        outcome = {"error": str(exc)}
    with open(result_path, "w") as fh:
        json.dump(outcome, fh)
