"""What every probe has in common, and what it is given to run."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, ClassVar

from benchmarks.sample import Sample


class ProbeError(Exception):
    """A probe could not measure; the message says why, for the run's error text."""


class Cancelled(ProbeError):
    def __init__(self) -> None:
        super().__init__("the platform cancelled this run (or its lease was taken over)")


@dataclass(frozen=True)
class Peer:
    name: str
    host: str
    iperf3_port: int = 5201

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> Peer:
        return cls(name=str(data["name"]), host=str(data["host"]),
                   iperf3_port=int(data.get("iperf3_port", 5201)))


@dataclass
class ProbeContext:
    params: dict[str, float]
    peers: list[Peer] = field(default_factory=list)
    # Called with (probe, step, steps); may raise Cancelled when the run was cancelled.
    report: Callable[[str, int, int], None] = lambda probe, step, steps: None


class Probe:
    name: ClassVar[str]

    def __init__(self, ctx: ProbeContext) -> None:
        self.ctx = ctx

    def prepare(self) -> None:
        """Check what the probe needs is there; raise ProbeError with the fix if not."""

    def run(self) -> list[Sample]:
        raise NotImplementedError

    def cleanup(self) -> None:
        """Remove whatever prepare/run left behind."""

    def param(self, name: str) -> float:
        return self.ctx.params[name]
