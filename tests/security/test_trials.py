"""The evidence ladder and buyers' trials: what a provider's host types stays its claim, and
what a buyer's own agent measures ranks. How a cheating provider, another buyer or an
outsider would try to use a trial, and what stops each."""

from __future__ import annotations

import json
import subprocess
import sys
from datetime import timedelta
from pathlib import Path
from typing import Any

import pytest
from django.test import Client
from django.utils import timezone

from fleet.models import Node
from jobs.models import Run, Sample
from jobs.services import submission, sweeper
from lab.procs import wait_for
from tests.fixtures import HONEST_INVENTORY, Enrolled, make_actor, measured, trial_agent

REPO = Path(__file__).resolve().parents[2]
# Typed by a GPU-less host on a buyer's quick run: every rule holds, and it is not measured.
TYPED_IOPS = {"storage.randread_iops": 2_000_000.0, "storage.randread_lat_mean": 16.0,
              "storage.checkpoint_write": 9.0}
HONEST_IOPS = {"storage.randread_iops": 40_000.0, "storage.randread_lat_mean": 800.0,
               "storage.checkpoint_write": 1.2}


def board(client: Any, metric: str, evidence: str = "") -> dict[str, Any]:
    page: dict[str, Any] = client.get("/api/v1/leaderboard", {
        "metric": metric, **({"evidence": evidence} if evidence else {})}).json()
    return page


def names(rows: list[dict[str, Any]]) -> list[str]:
    return [r["node"]["name"] for r in rows]


def trial_token(client: Any, node: Enrolled, hours: int = 24) -> Any:
    return client.post(f"/api/v1/nodes/{node.node.pk}/trial-tokens", {"hours": hours},
                       format="json")


def test_typed_figures_are_claims_and_a_buyers_trial_ranks(buyer: Any, enrol_node: Any) -> None:
    """2,000,000 IOPS at 16 us typed by the host ranked #1 on the default storage board; now
    it is listed apart as the provider's claim, and the node a buyer measured ranks."""
    cheat, honest = enrol_node("hz-cheat"), enrol_node("hz-honest")
    measured(buyer, cheat, 9.0, extra=TYPED_IOPS)
    measured(buyer, trial_agent(buyer, honest), 1.0, extra=HONEST_IOPS)
    page = board(buyer.client(), "storage.randread_iops")
    assert page["evidence"] == "measured"
    assert names(page["results"]) == ["hz-honest"]
    row = page["results"][0]
    assert (row["value"], row["evidence"], row["rank"]) == (40_000.0, "buyer-measured", 1)
    assert row["evidence_source"].startswith("buyer's trial agent")
    apart = page["host_reported"]
    assert names(apart) == ["hz-cheat"] and apart[0]["rank"] is None
    assert apart[0]["evidence"] == "host-reported" and apart[0]["score"]["value"] is None
    # Every figure, marked, when a buyer asks for them.
    everything = board(buyer.client(), "storage.randread_iops", "any")
    assert names(everything["results"]) == ["hz-cheat", "hz-honest"]
    assert [r["evidence"] for r in everything["results"]] == ["host-reported", "buyer-measured"]
    # Not even the platform-verified-only board shows the buyer's figure as the platform's.
    assert board(buyer.client(), "storage.randread_iops", "verified")["results"] == []
    # The web page: the trial's row ranked and badged, the claim apart.
    html = Client().get("/en/?metric=storage.randread_iops").content.decode()
    assert html.index("hz-honest") < html.index('id="host-reported"') < html.index("hz-cheat")
    assert 'class="badge measured"' in html


def test_a_node_scores_only_on_measured_figures_with_every_core_part(
        buyer: Any, enrol_node: Any) -> None:
    node = enrol_node("hz-1")
    measured(buyer, node, 9.0, extra={**TYPED_IOPS, "network.tcp_rtt": 0.1})
    report = buyer.client().get(f"/api/v1/nodes/{node.node.pk}/report").json()
    assert report["score"]["value"] is None  # the host's word alone scores nothing
    agent = trial_agent(buyer, node)
    measured(buyer, agent, 9.0)  # the buyer measured the network, not the storage
    report = buyer.client().get(f"/api/v1/nodes/{node.node.pk}/report").json()
    assert report["score"]["value"] is None
    assert report["score"]["missing"] == ["latency", "iops", "checkpoint"]
    measured(buyer, agent, 9.0, extra={**HONEST_IOPS, "network.tcp_rtt": 5.0})
    report = buyer.client().get(f"/api/v1/nodes/{node.node.pk}/report").json()
    # Bandwidth, latency and checkpoint at their targets, IOPS at 0.4 of its: (3+2+0.4+1)/7.
    assert report["score"]["value"] == pytest.approx(91.4)


def test_a_provider_cannot_run_a_trial_of_its_own_node(provider_owner: Any,
                                                       enrol_node: Any) -> None:
    node = enrol_node("hz-1")
    response = trial_token(provider_owner.client(), node)
    assert response.status_code == 403
    assert "own provider cannot measure it as a buyer" in response.json()["detail"]
    assert not Node.objects.filter(trial_of=node.node).exists()


def test_a_trial_token_enrols_only_with_trial_and_only_the_nodes_hardware(
        buyer: Any, enrol_node: Any) -> None:
    gpu = {"available": True, "devices": [{"name": "NVIDIA H800", "uuid": "GPU-aaaa",
                                           "serial": "1320"}]}
    node = enrol_node("hz-gpu", inventory={**HONEST_INVENTORY, "gpu": gpu})
    client = Client()

    def enrol(token: str, inventory: dict[str, Any], trial: bool = True) -> Any:
        return client.post("/api/v1/enrol", {"token": token, "inventory": inventory,
                                             "trial": trial}, content_type="application/json")

    token = trial_token(buyer.client(), node).json()["token"]
    response = enrol(token, {**HONEST_INVENTORY, "gpu": gpu}, trial=False)
    assert response.status_code == 400 and "--trial" in response.json()["detail"]
    # The provider hands the buyer a better machine than the node on the board.
    other = {"available": True, "devices": [{"name": "NVIDIA H800", "uuid": "GPU-bbbb",
                                             "serial": "7777"}]}
    response = enrol(token, {**HONEST_INVENTORY, "gpu": other})
    assert response.status_code == 409 and "is not node" in response.json()["detail"]
    response = enrol(token, {**HONEST_INVENTORY, "gpu": {**gpu, "devices": [
        {"name": "NVIDIA H200", "uuid": "GPU-aaaa"}]}})
    assert response.status_code == 409 and "H200" in response.json()["detail"]
    assert not Node.objects.filter(trial_of=node.node).exists()  # nothing half-made
    response = enrol(token, {**HONEST_INVENTORY, "gpu": gpu})  # the token was not spent
    assert response.status_code == 201, response.content
    creds = response.json()
    assert creds["trial_of"] == node.node.pk and creds["trial_ends_at"]
    agent = Node.objects.get(pk=creds["node_id"])
    assert agent.trial_buyer == buyer.user and agent.predecessor is None
    assert not agent.host_keys.exists()  # the node's hardware stays the node's
    node.node.refresh_from_db()
    assert node.node.predecessor is None
    # A provider's token is not a trial's.
    from fleet.services import enrolment
    _, plain = enrolment.create_token(node.node.provider, node.node.region, "hz-next",
                                      node.node.provider.owners.get())
    response = enrol(plain, HONEST_INVENTORY)
    assert response.status_code == 400 and "without --trial" in response.json()["detail"]


def test_only_the_trials_buyer_sees_and_uses_its_agent(
        buyer: Any, other_buyer: Any, provider_owner: Any, enrol_node: Any) -> None:
    node = enrol_node("hz-1")
    agent = trial_agent(buyer, node)
    for actor in (other_buyer, provider_owner):
        with pytest.raises(Exception, match="unknown or revoked node ids"):
            submission.submit(actor.user, [agent.node.pk], "network", profile="quick")
        listed = [n["id"] for n in actor.client().get("/api/v1/nodes").json()["results"]]
        assert agent.node.pk not in listed and node.node.pk in listed
    mine = {n["id"]: n for n in buyer.client().get("/api/v1/nodes").json()["results"]}
    assert mine[agent.node.pk]["trial_of"] == node.node.pk
    # The provider can neither revoke nor price the buyer's agent, nor pause or certify it.
    client = provider_owner.client()
    for path in ("revoke", "price", "certifications", "retests/pause"):
        assert client.post(f"/api/v1/nodes/{agent.node.pk}/{path}", {},
                           format="json").status_code == 404, path
    agent.node.refresh_from_db()
    assert agent.node.status == Node.Status.ACTIVE
    # The platform does not schedule re-tests of an agent: it re-tests the node itself.
    with pytest.raises(Exception, match="unknown or revoked node ids"):
        submission.submit(buyer.user, [agent.node.pk], "network", by_platform=True)
    # The public pages of the node are the node's; the agent has none.
    assert Client().get(f"/en/nodes/{agent.node.pk}/").status_code == 404


def test_a_trial_ends_its_key_and_its_queue_and_its_figures_stay_dated(
        buyer: Any, enrol_node: Any) -> None:
    node = enrol_node("hz-1")
    agent = trial_agent(buyer, node, hours=1)
    measured(buyer, agent, 2.0, extra=HONEST_IOPS)
    Node.objects.filter(pk=agent.node.pk).update(trial_ends_at=timezone.now() - timedelta(seconds=1))
    response = agent.client().post("/api/v1/node/heartbeat", {}, format="json")
    assert response.status_code in (401, 403)
    assert "trial ended" in response.json()["detail"]
    with pytest.raises(Exception, match="has ended"):
        submission.submit(buyer.user, [agent.node.pk], "storage")
    assert sweeper.sweep().trials_ended == 1
    agent.node.refresh_from_db()
    assert agent.node.status == Node.Status.REVOKED
    assert sweeper.sweep().trials_ended == 0
    # What the buyer measured during the trial is still the node's, dated, buyer-measured.
    row = board(buyer.client(), "storage.randread_iops")["results"][0]
    assert (row["node"]["id"], row["evidence"]) == (node.node.pk, "buyer-measured")


def test_trial_tokens_are_bounded_per_buyer_and_day(buyer: Any, enrol_node: Any,
                                                    settings: Any) -> None:
    settings.TRIAL_TOKENS_PER_DAY = 2
    node = enrol_node("hz-1")
    assert [trial_token(buyer.client(), node).status_code for _ in range(3)] == [201, 201, 429]
    assert trial_token(buyer.client(), node, hours=10_000).status_code == 400
    assert trial_token(make_actor("another-buyer").client(), node).status_code == 201


@pytest.mark.slow
def test_a_buyer_enrols_a_trial_agent_with_benchctl_and_its_fio_figures_rank(
        live_server: Any, buyer: Any, enrol_node: Any, worker_factory: Any,
        tmp_path: Path) -> None:
    """End to end, as a buyer does it: a trial token, `benchctl enroll --trial` on the
    instance, its worker, a published storage run measured with fio by the buyer's agent."""
    node = enrol_node("hz-rented", api_url=live_server.url)
    token = trial_token(buyer.client(), node, hours=2).json()
    config = tmp_path / "trial.json"
    done = subprocess.run([sys.executable, "-m", "workers.cli", "--config", str(config),
                           "enroll", "--trial", "--url", live_server.url, "--token",
                           token["token"]], capture_output=True, text=True, cwd=REPO,
                          timeout=60, check=False)
    assert done.returncode == 0, done.stderr
    assert f"trial agent of node {node.node.pk}" in done.stdout
    saved = json.loads(config.read_text())
    assert saved["trial_of"] == node.node.pk
    worker_factory(config, "w-trial")
    job, _ = submission.submit(buyer.user, [saved["node_id"]], "storage", profile="quick")
    wait_for(lambda: not Run.objects.filter(job=job, status__in=["queued", "running"]).exists(),
             240, "the trial agent's storage run")
    run = job.runs.get()
    assert run.status == Run.Status.SUCCEEDED, run.error
    assert set(run.samples.values_list("evidence", flat=True)) == {Sample.BUYER_MEASURED}
    row = board(buyer.client(), "storage.randread_iops")["results"][0]
    iops = run.samples.get(metric="storage.randread_iops").value
    assert (row["node"]["id"], row["evidence"], row["value"]) == (node.node.pk, "buyer-measured",
                                                                  iops)
