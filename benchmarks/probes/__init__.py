"""The probe registry. A probe: a name, its parameters, and prepare / run / cleanup."""

from __future__ import annotations

from benchmarks.probes.base import Probe, ProbeContext, ProbeError
from benchmarks.probes.gpu import GpuProbe
from benchmarks.probes.network import NetworkProbe
from benchmarks.probes.noop import NoopProbe
from benchmarks.probes.storage import StorageProbe
from benchmarks.probes.training import TrainingProbe

PROBES: dict[str, type[Probe]] = {
    p.name: p for p in (NetworkProbe, StorageProbe, TrainingProbe, GpuProbe, NoopProbe)}

__all__ = ["PROBES", "Probe", "ProbeContext", "ProbeError"]
