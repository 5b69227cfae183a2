"""Injected faults named by the diagnosis (#36): real namespaces, nft drops, latency relays.

Three nodes of one region, shaped alike, no reference (a multi-node network job measures
between the nodes). Two of the fault bench's kinds, one per mechanism the lab adds for it:
packets dropped on one link (nft, both ends) and latency added to one node (a relay holding
each of its connections). Each is measured as a buyer measures a cluster, through the
platform, and the diagnosis must name that part, of that kind, and nothing else; the fault
bench (`python -m perf.accuracy faults`) draws the other kinds and scores many cases.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from board import link_faults
from board.models import LinkResult
from jobs.models import Run
from jobs.services import submission
from lab import faults
from lab.procs import wait_for
from lab.stack import LabStack
from perf import fault_bench
from tests.labtests.labs import lab_of

pytestmark = [
    pytest.mark.slow,
    pytest.mark.serial,
    pytest.mark.skipif(os.geteuid() != 0, reason="the lab needs root (ip netns, tc, nft)"),
]

NAMES = ["f1", "f2", "f3"]


@pytest.fixture
def lab(live_server: Any, private_redis: Any, provider: Any, provider_owner: Any, hangzhou: Any,
        tmp_path: Path) -> Iterator[LabStack]:
    node = {"kind": "node", "region": "hangzhou", "provider": provider.name,
            "rate_mbit": fault_bench.RATE_MBIT}
    yield from lab_of({"name": "lf", "hosts": [node | {"name": n} for n in NAMES]},
                      live_server, private_redis, provider_owner, tmp_path)


def diagnosed(buyer: Any, lab: LabStack) -> tuple[set[tuple[str, str]], list[LinkResult]]:
    job, _ = submission.submit(buyer.user, [lab.nodes[n].node_id for n in NAMES], "network",
                               fault_bench.NETWORK)
    wait_for(lambda: not Run.objects.filter(job=job, status__in=["queued", "running"]).exists(),
             300, "the network job", interval=1.0)
    for run in Run.objects.filter(job=job):
        assert run.status == "succeeded", (run.node.name, run.error)
    wait_for(lambda: LinkResult.objects.filter(job=job).count() == 6, 30, "the link results")
    links = list(LinkResult.objects.filter(job=job).select_related("source", "target"))
    for li in sorted(links, key=lambda li: (li.source.name, li.target.name)):
        print(f"{li.source.name} -> {li.target.name}: {li.throughput_gbps:.3f} Gbit/s "
              f"(cv {li.throughput_cv}), {li.retransmits_per_gb} retransmits/GB, "
              f"RTT {li.rtt_ms} ms")
    found = link_faults.findings(links)
    print([f.verdict for f in found])
    return {(f.part, f.kind) for f in found}, links


def with_fault(buyer: Any, lab: LabStack,
               fault: faults.Fault) -> tuple[set[tuple[str, str]], list[LinkResult]]:
    faults.inject(lab, fault)
    try:
        return diagnosed(buyer, lab)
    finally:
        faults.clear(lab, fault)


def test_a_lossy_link_and_a_latent_node_are_named(lab: LabStack, buyer: Any) -> None:
    named, links = with_fault(buyer, lab, faults.Fault("lossy-link", ("f1", "f3"),
                                                       faults.KINDS["lossy-link"][1]))
    # That part and no other; lossy among what is said of it (the drops may slow it too).
    assert {part for part, _kind in named} == {"link:f1-f3"}, named
    assert ("link:f1-f3", "lossy") in named, named
    # Every sender counted its retransmits: the figure the finding stands on was measured.
    assert all(li.retransmits_per_gb is not None and li.throughput_cv is not None
               for li in links)

    latent = faults.Fault("latent-node", ("f2",), faults.KINDS["latent-node"][1])
    named, links = with_fault(buyer, lab, latent)
    # The 5 ms held in the node's relays may also show as retransmits on its links
    # (thousands per GB where the healthy links have none): said of the same part, if at all.
    assert {part for part, _kind in named} == {"node:f2"}, named
    assert ("node:f2", "latent") in named, named
    added = [li.rtt_ms for li in links if "f2" in (li.source.name, li.target.name)]
    assert all(r is not None and r >= latent.amount for r in added), added
