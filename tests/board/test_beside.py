"""Runs the platform ran beside others on one machine stay out of a median of runs measured
alone (#32 item 1).

Before: hz-a100-01's board IOPS was the mean of 28,333 (measured while the lab's three other
nodes, on the same machine, ran their suites) and 94,593 (measured alone). Here two nodes
name one machine-id, as the lab's namespaces do; their runs overlap as a multi-node job's do,
through the real claim and finish (their throughput to the reference: the uplink is shared).
"""

from __future__ import annotations

from typing import Any

from board.models import LatestResult
from fleet.models import Node, Provider
from jobs.services import lifecycle, submission
from tests.fixtures import HONEST_INVENTORY, Enrolled

LINK = "network.tcp_throughput"
ONE_MACHINE = {**HONEST_INVENTORY, "machine_id": "0f1e2d3c4b5a69788796a5b4c3d2e1f0"}


def claim(buyer: Any, e: Enrolled) -> Any:
    job, _ = submission.submit(buyer.user, [e.node.pk], "network", profile="default")
    return lifecycle.claim(e.node, job.runs.get().pk)


def finish(e: Enrolled, claimed: Any, gbps: float, steal: float | None = None) -> None:
    metadata = {"conditions": {"cpu_steal": steal}} if steal is not None else {}
    samples = [{"metric": LINK, "value": gbps, "unit": "Gbit/s", "n": 3, "p5": gbps * 0.95,
                "p95": gbps * 1.05, "min": None, "max": None, "cv": 0.02, "metadata": metadata}]
    lifecycle.finish(e.node, claimed.run.pk, claimed.attempt.id, True, samples, "", {})


def alone(buyer: Any, e: Enrolled, gbps: float, steal: float | None = None) -> None:
    finish(e, claim(buyer, e), gbps, steal)


def together(buyer: Any, a: Enrolled, b: Enrolled, gbps_a: float, gbps_b: float) -> None:
    """Both nodes' runs claimed before either finishes: they ran at the same time."""
    first, second = claim(buyer, a), claim(buyer, b)
    finish(a, first, gbps_a)
    finish(b, second, gbps_b)


def row(e: Enrolled) -> LatestResult:
    return LatestResult.objects.get(node=e.node, metric=LINK, evidence=LatestResult.ANY)


def test_a_run_beside_another_on_the_same_machine_stays_out_of_the_alone_median(
        buyer: Any, enrol_node: Any) -> None:
    a = enrol_node("hz-a100-01", inventory=ONE_MACHINE)
    b = enrol_node("nb-a100-01", inventory=ONE_MACHINE)
    alone(buyer, a, 9.4)
    together(buyer, a, b, 2.8, 3.0)
    first = row(a)
    assert (first.value, first.runs, first.runs_apart, first.shared) == (9.4, 1, 1, False)
    assert first.p5 == first.p95 == 9.4  # the range is of the runs the value is made of
    # b was never measured alone: its value is its shared run's, and it says so.
    assert (row(b).value, row(b).shared, row(b).runs_apart) == (3.0, True, 0)
    # The API and the node page say what was kept apart.
    page = buyer.client().get(f"/api/v1/leaderboard?metric={LINK}&evidence=any").json()
    by_name = {r["node"]["name"]: r for r in page["results"]}
    assert by_name["hz-a100-01"]["runs_apart"] == 1 and not by_name["hz-a100-01"]["shared"]
    assert by_name["nb-a100-01"]["shared"]
    html = buyer.client().get(f"/en/nodes/{b.node.pk}/").content.decode()
    assert "measured beside other runs on its machine" in html


def test_nodes_on_different_machines_pool_their_overlapping_runs(
        buyer: Any, enrol_node: Any) -> None:
    a = enrol_node("hz-1", inventory={**ONE_MACHINE, "machine_id": "aa"})
    b = enrol_node("hz-2", inventory={**ONE_MACHINE, "machine_id": "bb"})
    alone(buyer, a, 9.0)
    together(buyer, a, b, 3.0, 3.0)
    assert (row(a).value, row(a).runs, row(a).runs_apart) == (6.0, 2, 0)


def test_a_rival_naming_the_same_machine_id_shares_nothing_with_it(
        buyer: Any, enrol_node: Any) -> None:
    """A machine is one provider's: another provider's node that names its machine-id (a
    cloned image, or on purpose, to run beside a rival's best runs) keeps nothing apart."""
    a = enrol_node("hz-1", inventory=ONE_MACHINE)
    rival = enrol_node("rival-1", inventory=ONE_MACHINE)
    Node.objects.filter(pk=rival.node.pk).update(
        provider=Provider.objects.create(name="Rival Cloud"))
    alone(buyer, a, 3.0)
    together(buyer, a, rival, 9.0, 1.0)
    assert (row(a).value, row(a).runs, row(a).runs_apart) == (6.0, 2, 0)


def test_a_host_that_claims_load_on_its_slow_run_does_not_drop_it(
        buyer: Any, enrol_node: Any) -> None:
    """Steal is the host's word: shown and named, never a reason to leave a run out."""
    a = enrol_node("sz-1", inventory=ONE_MACHINE)
    alone(buyer, a, 9.0)
    alone(buyer, a, 3.0, steal=0.9)
    assert (row(a).value, row(a).runs, row(a).runs_apart) == (6.0, 2, 0)
