"""What a claim answers: everything the node needs to run, all chosen by the platform.

The host never picks its peers, parameters or probes: `jobs.services.lifecycle.Claim.spec`
builds this, `workers.host.execution` reads it.
"""

from __future__ import annotations

from typing import Any, TypedDict

# A peer that is another node of the job (references are "reference:REGION:NAME"); the
# platform reads it back from a sample's peer to find the link it measured.
MESH_PREFIX = "node:"


class PeerSpec(TypedDict, total=False):
    name: str  # "reference:REGION:NAME"
    host: str
    iperf3_port: int
    echo_port: int | None
    token: str  # the run's token for the reference echo server's own record of RTT


class MeshEntry(TypedDict):
    rank: int
    node_id: int
    name: str
    host: str
    iperf3_port: int


class Rendezvous(TypedDict):
    master_addr: str
    master_port: int
    nnodes: int


class RunSpec(TypedDict):
    run_id: int
    attempt_id: str
    suite: str
    profile: str
    probes: list[str]
    params: dict[str, Any]  # resolved: the profile's values within contract.suites bounds
    peers: list[PeerSpec]
    lease_seconds: int
    mesh: list[MeshEntry]
    node_rank: int
    rendezvous: Rendezvous | None
