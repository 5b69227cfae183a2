"""node.figures_changed: a buyer watches nodes it may see, and hears when a ranked run of one
moves a figure by hooks/data/watch.yaml's change_fraction or more from the node's previous
ranked run (jobs.services.webhook_events.figures_changed)."""

from __future__ import annotations

import json
from typing import Any

import pytest

from config.errors import Invalid
from hooks.models import Delivery
from hooks.services import delivery, watch
from jobs.models import Run
from jobs.services import lifecycle, submission
from tests.fixtures import trial_agent
from tests.fixtures.webhooks import Receiver

EVENT = "node.figures_changed"


def post(actor: Any, url: str, nodes: list[int], events: list[str] | None = None) -> Any:
    return actor.client().post("/api/v1/webhooks", {
        "url": url, "events": [EVENT] if events is None else events, "nodes": nodes},
        format="json")


def ranked_run(owner: Any, enrolled: Any, gbps: float, rtt_ms: float = 2.0,
               by_platform: bool = False) -> Run:
    """A ranked network run of the node, stored as the node's worker posts it."""
    job, _ = submission.submit(owner, [enrolled.node.pk], "network", by_platform=by_platform)
    claim = lifecycle.claim(enrolled.node, job.runs.get().pk)
    samples = [{"metric": m, "value": v, "unit": u, "n": 3, "p5": v * 0.95, "p95": v * 1.05,
                "min": None, "max": None, "cv": 0.02, "metadata": {}}
               for m, v, u in [("network.tcp_throughput", gbps, "Gbit/s"),
                               ("network.tcp_rtt", rtt_ms, "ms")]]
    lifecycle.finish(enrolled.node, claim.run.pk, claim.attempt.id, True, samples, "", {})
    run = Run.objects.get(pk=claim.run.pk)
    assert run.ranked and run.status == "succeeded"
    return run


def test_a_big_change_of_a_watched_node_is_told_with_before_after_and_evidence(
        buyer: Any, enrol_node: Any, receiver: Receiver) -> None:
    node = enrol_node("hz-1")
    hook = post(buyer, receiver.url, [node.node.pk]).json()
    first = ranked_run(buyer.user, node, 5.0)
    assert not Delivery.objects.exists()  # its first figures: nothing to compare with

    dropped = ranked_run(buyer.user, node, 4.0)  # 20% lower; the RTT as before
    sent = Delivery.objects.get()
    assert (sent.webhook_id, sent.event, sent.subject) == (hook["id"], EVENT, f"run:{dropped.pk}")
    assert delivery.attempt(sent.pk) == "delivered"
    data = json.loads(receiver.received[0].body)["data"]
    assert (data["node"], data["run"], data["requested_by"]) == (node.node.pk, dropped.pk, "buyer")
    assert data["threshold"] == watch.CHANGE_FRACTION
    assert data["changes"] == [{
        "metric": "network.tcp_throughput", "unit": "Gbit/s", "before": 5.0, "after": 4.0,
        "change": -0.2, "previous_run": first.pk, "evidence": "host-reported",
        "evidence_source": ""}]


def test_a_change_under_the_threshold_is_not_told(
        buyer: Any, enrol_node: Any, receiver: Receiver) -> None:
    node = enrol_node("hz-1")
    post(buyer, receiver.url, [node.node.pk])
    ranked_run(buyer.user, node, 5.0)
    ranked_run(buyer.user, node, 5.0 * (1 - watch.CHANGE_FRACTION / 2), rtt_ms=2.1)
    assert not Delivery.objects.exists()


def test_a_re_test_that_drops_is_the_stability_signal(
        buyer: Any, provider_owner: Any, enrol_node: Any, receiver: Receiver) -> None:
    node = enrol_node("hz-1")
    post(buyer, receiver.url, [node.node.pk])
    ranked_run(provider_owner.user, node, 5.0, by_platform=True)
    retest = ranked_run(provider_owner.user, node, 5.0, rtt_ms=3.0, by_platform=True)
    sent = Delivery.objects.get()
    assert sent.payload["data"]["requested_by"] == "platform"
    assert [(c["metric"], c["change"]) for c in sent.payload["data"]["changes"]] == [
        ("network.tcp_rtt", 0.5)]
    assert sent.subject == f"run:{retest.pk}"


def test_an_unwatched_node_is_not_told(buyer: Any, enrol_node: Any, receiver: Receiver) -> None:
    watched, other = enrol_node("hz-1"), enrol_node("hz-2")
    post(buyer, receiver.url, [watched.node.pk])
    ranked_run(buyer.user, other, 5.0)
    ranked_run(buyer.user, other, 2.0)
    assert not Delivery.objects.exists()


def test_a_webhook_switched_off_is_not_told(
        buyer: Any, enrol_node: Any, receiver: Receiver) -> None:
    node = enrol_node("hz-1")
    hook = post(buyer, receiver.url, [node.node.pk]).json()
    assert buyer.client().patch(f"/api/v1/webhooks/{hook['id']}", {"active": False},
                                format="json").status_code == 200
    ranked_run(buyer.user, node, 5.0)
    ranked_run(buyer.user, node, 2.0)
    assert not Delivery.objects.exists()


def test_another_buyers_trial_agent_cannot_be_watched_and_reads_as_unknown(
        buyer: Any, other_buyer: Any, enrol_node: Any, receiver: Receiver) -> None:
    agent = trial_agent(other_buyer, enrol_node("hz-1"))
    refused = post(buyer, receiver.url, [agent.node.pk])
    assert refused.status_code == 400
    assert refused.json()["errors"] == {"nodes": f"no node {agent.node.pk} that you may watch"}
    unknown = post(buyer, receiver.url, [agent.node.pk + 1000])
    assert unknown.json()["errors"] == {"nodes": f"no node {agent.node.pk + 1000} that you may watch"}
    # Its own buyer may.
    assert post(other_buyer, receiver.url, [agent.node.pk]).status_code == 201


@pytest.mark.parametrize(("events", "nodes", "message"), [
    (["job.finished"], [1], "nodes are watched for node.figures_changed: add it to events"),
    ([EVENT], [], "name the nodes to watch for node.figures_changed"),
])
def test_nodes_and_the_watch_event_go_together(
        buyer: Any, enrol_node: Any, receiver: Receiver, events: list[str], nodes: list[int],
        message: str) -> None:
    enrol_node("hz-1")
    response = post(buyer, receiver.url, nodes, events)
    assert response.status_code == 400
    assert response.json()["errors"] == {"nodes": message}


def test_a_webhook_watches_at_most_max_nodes(buyer: Any, receiver: Receiver) -> None:
    response = post(buyer, receiver.url, list(range(1, watch.MAX_NODES + 2)))
    assert response.status_code == 400
    assert "nodes" in response.json()["errors"]
    with pytest.raises(Invalid, match=f"at most {watch.MAX_NODES} nodes"):
        watch.check(buyer.user, list(range(1, watch.MAX_NODES + 2)), [EVENT])


def test_a_change_is_a_fraction_of_the_figure_before_and_a_first_figure_is_none() -> None:
    found = watch.changes({"a": 10.0, "b": 10.0, "c": 0.0}, {"a": 11.0, "b": 10.5, "c": 3.0,
                                                             "d": 1.0}, fraction=0.10)
    assert [(c.key, round(c.fraction, 3)) for c in found] == [("a", 0.1)]
