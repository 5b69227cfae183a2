"""What every probe has in common, and what it is given to run."""

from __future__ import annotations

import ipaddress
import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any, ClassVar

from contract.run_spec import MESH_PREFIX, Rendezvous
from contract.sample import Sample


class ProbeError(Exception):
    """A probe could not measure; the message says why, for the run's error text."""


class Cancelled(ProbeError):
    def __init__(self) -> None:
        super().__init__("the platform cancelled this run (or its lease was taken over)")


# A reference may be named by DNS; a node is an IP literal (checked at enrolment). Nothing
# that a tool could take for an option, or for more than one argument, reaches a command.
HOST_NAME = re.compile(r"[A-Za-z0-9](?:[A-Za-z0-9-]{0,62})(?:\.[A-Za-z0-9](?:[A-Za-z0-9-]{0,62}))*")


def checked_host(host: Any, name: Any) -> str:
    """``host`` when it is an IP literal or a DNS name; a ProbeError otherwise."""
    text = str(host)
    try:
        return str(ipaddress.ip_address(text))
    except ValueError:
        if len(text) <= 253 and HOST_NAME.fullmatch(text):
            return text
    raise ProbeError(f"the run spec gives peer {str(name)[:64]!r} the address {text[:64]!r}, "
                     "which is not an IP address or host name; nothing was sent to it")


@dataclass(frozen=True)
class Peer:
    name: str
    host: str
    iperf3_port: int = 5201
    echo_port: int | None = None  # a TCP echo server, for TCP RTT where ICMP is blocked
    # The run's token for a platform reference endpoint's echo server (its own record).
    token: str = ""

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> Peer:
        echo = data.get("echo_port")
        return cls(name=str(data["name"]), host=checked_host(data["host"], data["name"]),
                   iperf3_port=int(data.get("iperf3_port", 5201)),
                   echo_port=int(echo) if echo else None, token=str(data.get("token") or ""))


@dataclass(frozen=True)
class MeshNode:
    """A node of a multi-node job, as its peers see it."""

    rank: int
    name: str
    host: str
    iperf3_port: int

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> MeshNode:
        host = checked_host(data["host"], data["name"]) if data["host"] else ""
        return cls(rank=int(data["rank"]), name=str(data["name"]), host=host,
                   iperf3_port=int(data["iperf3_port"]))

    def as_peer(self) -> Peer:
        return Peer(name=f"{MESH_PREFIX}{self.name}", host=self.host, iperf3_port=self.iperf3_port)


def no_barrier(name: str) -> None:
    """A single-node run meets nobody."""


class ReferenceSlots:
    """Turns at a reference endpoint's iperf3 server, which serves one test at a time.

    ``take`` returns once this run may start a test there (taking it again extends the
    turn), ``give_back`` when that test is over. Without a platform (tests, a
    command line), every turn is granted at once. Returns the seconds it waited.
    """

    def take(self, peer: str, seconds: float) -> float:
        return 0.0

    def give_back(self, peer: str) -> None:
        return None

    def credential(self, peer: str) -> dict[str, str] | None:
        """The turn's iperf3 credential (username, password, public_key) where the
        reference's server authenticates turns; None where it does not."""
        return None


@dataclass
class ProbeContext:
    params: dict[str, float]
    peers: list[Peer] = field(default_factory=list)
    # Called with (probe, step, steps); may raise Cancelled when the run was cancelled.
    report: Callable[[str, int, int], None] = lambda probe, step, steps: None
    # Multi-node jobs: every node (this one included), this node's rank, the DDP
    # rendezvous, and a barrier that returns once every node reached the named point.
    mesh: list[MeshNode] = field(default_factory=list)
    node_rank: int = 0
    rendezvous: Rendezvous | None = None
    barrier: Callable[[str], None] = no_barrier
    references: ReferenceSlots = field(default_factory=ReferenceSlots)

    @property
    def multi_node(self) -> bool:
        return len(self.mesh) > 1


class Probe:
    name: ClassVar[str]
    # Every metric it may report: the platform refuses a result with any other.
    produces: ClassVar[tuple[str, ...]] = ()

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
