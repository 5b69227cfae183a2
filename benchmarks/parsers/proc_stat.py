"""Parse the kernel's CPU time counters (``/proc/stat``) and load (``/proc/loadavg``).

The first line of ``/proc/stat`` sums every CPU's time since boot, in USER_HZ ticks::

    cpu  274190 737 153529 584981 15285 0 26160 682 0 0
         user   nice system idle  iowait irq softirq steal guest guest_nice

(proc(5); ``guest`` and ``guest_nice`` are already inside ``user`` and ``nice``, so they
are not added again). Two readings around a probe give what the host's CPUs did meanwhile:
the share stolen by the hypervisor for other tenants (``steal``, an oversold cloud CPU), the
share idle waiting on I/O (``iowait``), and the share busy. ``/proc/loadavg`` is three load
averages, running/total tasks and the last PID::

    2.30 1.01 3.56 7/243 27228
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from benchmarks.parsers import ParseError

FIELDS = ("user", "nice", "system", "idle", "iowait", "irq", "softirq", "steal")
_CPU_LINE = re.compile(r"^cpu +(?P<ticks>\d+(?: +\d+){3,9}) *$", re.MULTILINE | re.ASCII)
_LOADAVG = re.compile(r"^(?P<one>\d+\.\d+) (?P<five>\d+\.\d+) (?P<fifteen>\d+\.\d+) "
                      r"(?P<running>\d+)/(?P<tasks>\d+)", re.ASCII)


@dataclass(frozen=True)
class CpuTimes:
    user: int
    nice: int
    system: int
    idle: int
    iowait: int
    irq: int
    softirq: int
    steal: int

    @property
    def total(self) -> int:
        return sum(getattr(self, f) for f in FIELDS)


@dataclass(frozen=True)
class CpuShares:
    """What the CPUs did between two readings, each a share of the time that passed."""

    busy: float  # user, nice, system, irq and softirq
    iowait: float
    steal: float
    ticks: int  # how much time the shares are of (every CPU's ticks together)


@dataclass(frozen=True)
class LoadAverage:
    one: float
    five: float
    fifteen: float
    running: int
    tasks: int


def parse_stat(text: str) -> CpuTimes:
    found = _CPU_LINE.search(text)
    if found is None:
        raise ParseError("no aggregate 'cpu' line in /proc/stat")
    ticks = [int(t) for t in found["ticks"].split()]
    # Kernels before 2.6.11 lack steal (and older ones iowait, irq, softirq): zero, as unknown
    # time cannot have been stolen.
    ticks += [0] * (len(FIELDS) - len(ticks))
    return CpuTimes(*ticks[:len(FIELDS)])


def shares(before: CpuTimes, after: CpuTimes) -> CpuShares:
    """The share of the time between two readings that was busy, waiting on I/O, stolen."""
    delta = {f: getattr(after, f) - getattr(before, f) for f in FIELDS}
    if any(v < 0 for v in delta.values()):
        raise ParseError("/proc/stat went backwards: the readings are from two boots or hosts")
    total = sum(delta.values())
    if total == 0:
        return CpuShares(0.0, 0.0, 0.0, 0)
    busy = sum(delta[f] for f in ("user", "nice", "system", "irq", "softirq"))
    return CpuShares(busy / total, delta["iowait"] / total, delta["steal"] / total, total)


def parse_loadavg(text: str) -> LoadAverage:
    found = _LOADAVG.match(text.strip())
    if found is None:
        raise ParseError(f"not a /proc/loadavg line: {text[:80]!r}")
    return LoadAverage(float(found["one"]), float(found["five"]), float(found["fifteen"]),
                       int(found["running"]), int(found["tasks"]))
