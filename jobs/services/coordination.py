"""Multi-node jobs: who the peers are (ranks, addresses), the DDP rendezvous, and the
barriers where every node waits for the others (contract.schedule says who tests what)."""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass
from typing import Any

from django.db import IntegrityError, transaction

from contract.run_spec import MeshEntry, Rendezvous
from contract.schedule import link_rounds
from fleet.models import Node
from jobs.models import BarrierArrival, BenchmarkJob, Run

RENDEZVOUS_PORT_BASE = 29500
RENDEZVOUS_PORTS = 400


def mesh(job: BenchmarkJob) -> list[MeshEntry]:
    """The job's nodes with their ranks (by run order) and where peers reach them."""
    # Only what a peer needs: a node's full row carries its inventory, parsed for nothing.
    # "job" too: the related manager sets each run's job from its job_id, and a deferred
    # job_id was read back one query per run (py-spy, make bench: half of a claim's time).
    runs = (job.runs.select_related("node").order_by("id")
            .only("id", "job", "node", "node__name", "node__address", "node__iperf3_port"))
    return [mesh_entry(i, r.node) for i, r in enumerate(runs)]


def mesh_entry(rank: int, node: Node) -> MeshEntry:
    return {"rank": rank, "node_id": node.pk, "name": node.name, "host": node.address or "",
            "iperf3_port": node.iperf3_port}


def rendezvous(job: BenchmarkJob, nodes: list[MeshEntry]) -> Rendezvous | None:
    if len(nodes) < 2:
        return None
    return {"master_addr": nodes[0]["host"] or "127.0.0.1",
            "master_port": RENDEZVOUS_PORT_BASE + job.pk % RENDEZVOUS_PORTS,
            "nnodes": len(nodes)}


@dataclass(frozen=True)
class BarrierState:
    ready: bool
    waiting_for: list[str]
    broken: str = ""
    activity: str = ""

    def as_dict(self) -> dict[str, Any]:
        return {"ready": self.ready, "waiting_for": self.waiting_for, "broken": self.broken,
                "activity": self.activity}


def name_error(job: BenchmarkJob, name: str) -> str | None:
    """Why a host may not wait at ``name``; None for the barriers the probes meet.

    Each arrival is a row: a host making up names would add rows without end. The probes
    meet a fixed few (benchmarks/probes: network-start, one per link round, training-start).
    """
    nodes = job.runs.count()
    rounds = len(link_rounds(nodes))
    known = {"network-start", "training-start", *(f"network-round-{i}" for i in range(rounds))}
    if name not in known:
        return (f"no barrier {name[:64]!r} in a {nodes}-node job "
                f"(network-start, network-round-0..{max(rounds - 1, 0)}, training-start)")
    return None


def arrive(run: Run, name: str) -> BarrierState:
    """Record that ``run`` reached ``name``; ready once every run of the job has."""
    try:
        with transaction.atomic():
            BarrierArrival.objects.create(run=run, name=name)
    except IntegrityError:
        pass  # arrived before (a retried request)
    runs = list(run.job.runs.select_related("node"))
    failed = [r for r in runs if r.status in (Run.Status.FAILED, Run.Status.CANCELLED)]
    if failed:
        return BarrierState(False, [r.node.name for r in failed],
                            broken="; ".join(f"node {r.node.name} {r.status}: {r.error}"
                                             for r in failed))
    arrived = set(BarrierArrival.objects.filter(run__job=run.job, name=name)
                  .values_list("run_id", flat=True))
    waiting = [r.node.name for r in runs if r.pk not in arrived]
    return BarrierState(not waiting, waiting, activity=activity(runs))


def activity(runs: list[Run]) -> str:
    """Changes whenever any run of the job reports progress: a node waiting at a barrier
    waits on while the others are busy (at a shared reference, say), and gives up only on
    a node that stopped moving."""
    state = json.dumps([(r.pk, r.status, r.progress) for r in runs], sort_keys=True, default=str)
    return hashlib.sha256(state.encode()).hexdigest()[:16]
