"""The host's own load while a probe ran: what else its CPUs did, read from the kernel.

A figure measured beside other tenants is not the figure of the same node alone (#32: an
IOPS figure of 28,333 beside three other suites, 94,593 alone, pooled into one median). Each
probe's samples carry its conditions (``metadata["conditions"]``): the CPUs' busy, iowait and
steal shares over the probe (``/proc/stat`` read before and after) and the load average at
its end. They are the host's word, as every host figure is: the board shows them and the
diagnosis names steal ("oversold CPU"), but only what the platform knows itself (its own
runs beside one another on a host) keeps a run out of a median.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from benchmarks.parsers import ParseError
from benchmarks.parsers.proc_stat import CpuTimes, parse_loadavg, parse_stat, shares

PROC = Path("/proc")


@dataclass(frozen=True)
class Reading:
    cpu: CpuTimes | None


def read(proc: Path = PROC) -> Reading:
    """The CPU counters now; None where the kernel gives none (not Linux, no /proc)."""
    try:
        return Reading(parse_stat((proc / "stat").read_text()))
    except (OSError, ParseError):
        return Reading(None)


def during(before: Reading, proc: Path = PROC) -> dict[str, Any]:
    """What the host's CPUs did since ``before``: shares of the time, rounded to 0.1%, and the
    load at the end; an empty dict where it cannot be read (nothing is made up)."""
    after = read(proc)
    out: dict[str, Any] = {}
    if before.cpu is not None and after.cpu is not None:
        try:
            found = shares(before.cpu, after.cpu)
        except ParseError:
            found = None
        if found is not None and found.ticks:
            out |= {"cpu_busy": round(found.busy, 3), "cpu_iowait": round(found.iowait, 3),
                    "cpu_steal": round(found.steal, 3)}
    try:
        load = parse_loadavg((proc / "loadavg").read_text())
        out |= {"load1": load.one, "cpus": os.cpu_count() or 0}
    except (OSError, ParseError):
        pass
    return out
