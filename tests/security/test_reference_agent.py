"""The reference's records reach the platform only from the reference's agent, over the API.

Real parts: the live server and PostgreSQL, the session's reference iperf3 and echo servers,
and their agent as a `benchctl reference-agent` process (tests.fixtures.reference_agent). A
cheating host holds a node key and can reach the API; it must not be able to hand in a
record, and a record handed in by another region's reference proves nothing here.
"""

from __future__ import annotations

import json
import time
from typing import Any

import pytest
import requests

from benchmarks.probes.network import tcp_echo_rtts
from fleet.models import ReferenceEndpoint, Region
from fleet.services import reference_keys
from jobs.models import ReferenceRecord, Sample
from jobs.services import evidence, submission

pytestmark = pytest.mark.slow


def claim(node: Any, job: Any) -> dict[str, Any]:
    run = job.runs.get(node=node.node)
    spec: dict[str, Any] = node.client().post(f"/api/v1/node/runs/{run.pk}/claim").json()
    return spec


def post(node: Any, spec: dict[str, Any], rtts: list[float]) -> Any:
    value = min(rtts)
    sample = {"metric": "network.tcp_rtt", "value": value, "unit": "ms", "n": len(rtts),
              "p5": value, "p95": value, "min": value, "max": value, "cv": 0.0,
              "metadata": {"peer": spec["peers"][0]["name"], "tool": "tcp echo"}}
    return node.client().post(f"/api/v1/node/runs/{spec['run_id']}/result", {
        "attempt_id": spec["attempt_id"], "status": "succeeded", "samples": [sample],
        "inventory": {}}, format="json")


def forged(token: str, client: str = "127.0.0.1") -> dict[str, Any]:
    """The echo record a host would like the reference to have written: 0.01 ms."""
    return {"token": token, "client": client, "started": time.time(), "paced_by": "reference",
            "round_trips": 10, "rtts_ms": [0.01] * 10, "median_ms": 0.01}


def records_url(live_server: Any) -> str:
    return f"{live_server.url}/api/v1/reference/records"


def test_an_honest_rtt_is_verified_from_the_record_the_agent_handed_in(
        buyer: Any, enrol_node: Any, reference_agent: Any) -> None:
    node = enrol_node("hz-1")
    job, _ = submission.submit(buyer.user, [node.node.pk], "network", profile="quick")
    spec = claim(node, job)
    peer = spec["peers"][0]
    rtts = tcp_echo_rtts("127.0.0.1", peer["echo_port"], 10, token=peer["token"])
    # Posted at once: the platform waits for the agent's next post, a fraction of a second.
    assert post(node, spec, rtts).status_code == 200
    stored = Sample.objects.get(run_id=spec["run_id"])
    assert stored.evidence == "platform-verified", stored.evidence_source
    token = evidence.echo_token(spec["attempt_id"])
    record = ReferenceRecord.objects.get(kind=ReferenceRecord.ECHO, key=token)
    assert record.endpoint_id == reference_agent.endpoint.pk and record.payload["round_trips"] == 10


def test_a_host_cannot_hand_in_a_record(buyer: Any, enrol_node: Any, reference_agent: Any,
                                        live_server: Any) -> None:
    node = enrol_node("hz-cheat")
    job, _ = submission.submit(buyer.user, [node.node.pk], "network", profile="quick")
    spec = claim(node, job)
    body = {"iperf3": [], "echo": [forged(evidence.echo_token(spec["attempt_id"]))],
            "through": time.time()}
    for headers in ({}, {"Authorization": f"Node {node.api_key}"},
                    {"Authorization": f"Token {buyer.token}"},
                    {"Authorization": f"Reference rk_{reference_agent.endpoint.pk}.guessed"},
                    {"Authorization": "Reference " + reference_agent.key_file.read_text()[:-1]}):
        response = requests.post(records_url(live_server), json=body, headers=headers, timeout=10)
        assert response.status_code in (401, 403), (headers, response.text)
    assert not ReferenceRecord.objects.filter(kind=ReferenceRecord.ECHO).exists()
    # The claimed 0.01 ms stays the host's claim: no record of the reference's says it.
    assert post(node, spec, [0.01] * 10).status_code == 200
    assert Sample.objects.get(run_id=spec["run_id"]).evidence == "host-reported"


def test_another_regions_reference_cannot_vouch_for_this_ones_tests(
        buyer: Any, enrol_node: Any, reference_agent: Any, live_server: Any) -> None:
    shenzhen = Region.objects.create(code="shenzhen", province="Guangdong", city="Shenzhen")
    other = ReferenceEndpoint.objects.create(region=shenzhen, name="ref1", host="10.9.0.1")
    key = reference_keys.issue(other)  # a key that leaked, or a reference of another region
    node = enrol_node("hz-1")
    job, _ = submission.submit(buyer.user, [node.node.pk], "network", profile="quick")
    spec = claim(node, job)
    response = requests.post(records_url(live_server), headers={
        "Authorization": f"Reference {key}"}, json={
        "iperf3": [], "echo": [forged(evidence.echo_token(spec["attempt_id"]))],
        "through": time.time()}, timeout=10)
    assert response.status_code == 200 and response.json()["stored"] == 1
    assert ReferenceRecord.objects.get().endpoint_id == other.pk  # kept as that server's
    assert post(node, spec, [0.01] * 10).status_code == 200
    assert Sample.objects.get(run_id=spec["run_id"]).evidence == "host-reported"


def test_a_post_past_the_bounds_is_refused_whole(reference_agent: Any, live_server: Any) -> None:
    headers = {"Authorization": f"Reference {reference_agent.key_file.read_text()}"}
    many = {"iperf3": [], "echo": [forged(f"t{i}") for i in range(501)], "through": 0}
    response = requests.post(records_url(live_server), json=many, headers=headers, timeout=10)
    assert response.status_code == 400 and "at most 500 records" in response.text
    huge = json.dumps({"iperf3": [{"pad": "x" * 1_100_000}], "echo": [], "through": 0})
    response = requests.post(records_url(live_server), data=huge, timeout=10,
                             headers=headers | {"Content-Type": "application/json"})
    assert response.status_code == 413
    response = requests.post(records_url(live_server), json={"echo": "x"}, headers=headers,
                             timeout=10)
    assert response.status_code == 400
    assert not ReferenceRecord.objects.filter(key__startswith="t").exists()


def test_while_the_agent_is_down_figures_stay_claims_and_its_restart_loses_no_record(
        buyer: Any, enrol_node: Any, reference_agent: Any, settings: Any) -> None:
    settings.REFERENCE_RECORDS_WAIT_S = 5.0  # the production default (config.settings)
    reference_agent.proc.stop()
    node = enrol_node("hz-1")
    job, _ = submission.submit(buyer.user, [node.node.pk], "network", profile="quick")
    spec = claim(node, job)
    peer = spec["peers"][0]
    rtts = tcp_echo_rtts("127.0.0.1", peer["echo_port"], 10, token=peer["token"])
    started = time.monotonic()
    assert post(node, spec, rtts).status_code == 200  # after REFERENCE_RECORDS_WAIT_S at most
    assert time.monotonic() - started < 15
    assert Sample.objects.get(run_id=spec["run_id"]).evidence == "host-reported"
    # Started again, the agent hands in from where it had: the record of that test too.
    reference_agent.proc = reference_agent.start()
    token = evidence.echo_token(spec["attempt_id"])
    deadline = time.monotonic() + 30
    while not ReferenceRecord.objects.filter(key=token).exists():
        assert time.monotonic() < deadline, reference_agent.proc.log()
        time.sleep(0.2)
    assert ReferenceRecord.objects.filter(key=token).count() == 1
