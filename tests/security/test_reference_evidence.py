"""A cheating provider against "platform-verified": what the reference measures itself.

Real parts: the node API (Django test client) and PostgreSQL, the reference's real echo
server and iperf3 server with their own logs, the lab's delaying relay as a process, real
iperf3 clients. A "proxy machine" is another source address on loopback (127.0.0.2): the
node's known address is 127.0.0.1, so the reference sees the test come from elsewhere.
"""

from __future__ import annotations

import contextlib
import socket
import sys
import time
from pathlib import Path
from typing import Any

import pytest

from benchmarks import runner
from benchmarks.parsers.iperf3 import parse_iperf3
from benchmarks.probes.network import ECHO_TOKEN_PREFIX, tcp_echo_rtts
from fleet.models import ReferenceEndpoint
from jobs.models import Sample
from jobs.services import observability, submission
from lab import procs

DELAY_MS = 15.0


def claim(node: Any, job: Any) -> dict[str, Any]:
    run = job.runs.get(node=node.node)
    spec: dict[str, Any] = node.client().post(f"/api/v1/node/runs/{run.pk}/claim").json()
    return spec


def post(node: Any, spec: dict[str, Any], samples: list[dict[str, Any]]) -> Any:
    return node.client().post(f"/api/v1/node/runs/{spec['run_id']}/result", {
        "attempt_id": spec["attempt_id"], "status": "succeeded", "samples": samples,
        "inventory": {}}, format="json")


def slot(node: Any, spec: dict[str, Any], peer: str, release: bool = False) -> Any:
    return node.client().post(f"/api/v1/node/runs/{spec['run_id']}/reference-slot", {
        "attempt_id": spec["attempt_id"], "peer": peer, "seconds": 30, "release": release},
        format="json")


def rtt_sample(value: float, peer: str) -> dict[str, Any]:
    return {"metric": "network.tcp_rtt", "value": value, "unit": "ms", "n": 10,
            "p5": value, "p95": value, "min": value, "max": value, "cv": 0.0,
            "metadata": {"peer": peer, "tool": "tcp echo"}}


def iperf3(port: int, bind: str = "127.0.0.1") -> Any:
    # The quick profile's parameters: 2 s, nothing omitted.
    done = runner.run(["iperf3", "-J", "-c", "127.0.0.1", "-p", str(port), "-B", bind,
                       "-t", "2", "-O", "0"], timeout=30)
    return parse_iperf3(done.stdout)


def turn_with_tests(buyer: Any, node: Any, port: int, count: int,
                    bind: str = "127.0.0.1") -> tuple[dict[str, Any], str, list[Any]]:
    """A buyer's quick network run claimed by hand: its reference turn taken, ``count`` real
    iperf3 tests from ``bind`` inside it, the turn given back."""
    job, _ = submission.submit(buyer.user, [node.node.pk], "network", profile="quick")
    spec = claim(node, job)
    peer = spec["peers"][0]["name"]
    assert slot(node, spec, peer).json()["granted"]
    tests = [iperf3(port, bind=bind) for _ in range(count)]
    slot(node, spec, peer, release=True)
    return spec, peer, tests


def throughput(results: list[Any], peer: str) -> dict[str, Any]:
    values = [r.receiver_bps / 1e9 for r in results]
    value = sorted(values)[len(values) // 2]
    return {"metric": "network.tcp_throughput", "value": value, "unit": "Gbit/s",
            "n": len(values), "p5": min(values), "p95": max(values), "min": min(values),
            "max": max(values), "cv": 0.0,
            "metadata": {"peer": peer, "tool": "iperf3", "cookies": [r.cookie for r in results]}}


@pytest.fixture
def delayed_path(tmp_path: Path, echo_port: int) -> Any:
    """The lab's latency path: a relay that adds DELAY_MS to each TCP round trip."""
    port = procs.free_port()
    proc = procs.start(f"relay-{port}", [
        sys.executable, "-m", "lab.relay", "--map", f"127.0.0.1:{port}=127.0.0.1:{echo_port}",
        "--delay-ms", str(DELAY_MS)], tmp_path)
    procs.wait_for(lambda: "relay ready" in proc.log(), 15, "relay")
    yield port
    proc.stop()


def test_an_rtt_the_host_paces_itself_is_not_verified_and_the_answered_one_is_the_paths(
        buyer: Any, enrol_node: Any, reference_endpoint: ReferenceEndpoint,
        delayed_path: int) -> None:
    node = enrol_node("hz-far")
    # The node's own path to its reference is the 15 ms relay (a dedicated endpoint).
    ReferenceEndpoint.objects.create(
        region=reference_endpoint.region, name="ref1-far", host="127.0.0.1",
        iperf3_port=reference_endpoint.iperf3_port, echo_port=delayed_path, node=node.node)
    job, _ = submission.submit(buyer.user, [node.node.pk], "network", profile="quick")
    spec = claim(node, job)
    peer = spec["peers"][0]
    assert peer["echo_port"] == delayed_path
    # The attack on main: send a byte every 0.3 ms without waiting for the echoes (the
    # token line as main's client sent it; the server now paces 20 round trips itself).
    # The reference may end the session at the first wrong answer; the lab's relay (since
    # #33) then closes the attacker's side too, so its next byte meets a closed connection.
    with socket.create_connection(("127.0.0.1", delayed_path), timeout=5) as sock, \
            contextlib.suppress(BrokenPipeError, ConnectionResetError):
        sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        sock.sendall(f"{ECHO_TOKEN_PREFIX}{peer['token']}\n".encode())
        for _ in range(200):
            sock.sendall(b"x")
            time.sleep(0.0003)
    assert post(node, spec, [rtt_sample(0.3, peer["name"])]).status_code == 200
    stored = Sample.objects.get(run_id=spec["run_id"])
    assert stored.evidence == "host-reported" and stored.value == 0.3  # a claim, unranked
    page = buyer.client().get("/api/v1/leaderboard?metric=network.tcp_rtt").json()
    assert page["results"] == [] and [r["node"]["name"] for r in page["host_reported"]] == [
        "hz-far"]

    # Answering honestly, the reference's own timing is the delayed path's.
    job, _ = submission.submit(buyer.user, [node.node.pk], "network", profile="quick")
    spec = claim(node, job)
    peer = spec["peers"][0]
    rtts = tcp_echo_rtts("127.0.0.1", peer["echo_port"], 10, token=peer["token"])
    assert post(node, spec, [rtt_sample(min(rtts), peer["name"])]).status_code == 200
    stored = Sample.objects.get(run_id=spec["run_id"])
    assert stored.evidence == "platform-verified"
    # The path's 15 ms, not the 0.41 ms a host-paced record said on main (0.8: the relay
    # subtracts its own overhead, measured at its start, which a loaded machine overstates).
    assert stored.value >= DELAY_MS * 0.8, stored.value
    assert "sent and timed 10 round trips" in stored.evidence_source


def test_a_proxy_machines_iperf3_test_with_the_runs_turn_is_refused(
        buyer: Any, enrol_node: Any, reference_endpoint: ReferenceEndpoint) -> None:
    node = enrol_node("hz-slow")
    # A faster machine of the provider's (another address) runs the test in the node's turn.
    spec, peer, proxied = turn_with_tests(buyer, node, reference_endpoint.iperf3_port, 1,
                                          bind="127.0.0.2")
    response = post(node, spec, [throughput(proxied, peer)])
    assert response.status_code == 422, response.content
    assert "127.0.0.2" in response.json()["errors"]["reference_address_mismatch"]
    assert not Sample.objects.filter(run_id=spec["run_id"]).exists()
    assert 'reason="inconsistent:reference_address_mismatch"' in observability.render()


def test_a_host_that_shows_its_best_test_of_several_is_refused(
        buyer: Any, enrol_node: Any, reference_endpoint: ReferenceEndpoint) -> None:
    node = enrol_node("hz-1")
    spec, peer, tests = turn_with_tests(buyer, node, reference_endpoint.iperf3_port, 3)
    best = max(tests, key=lambda r: r.receiver_bps)
    response = post(node, spec, [throughput([best], peer)])
    assert response.status_code == 422, response.content
    withheld = response.json()["errors"]["reference_tests_withheld"]
    assert "does not present it" in withheld
    # Every test of its turn presented: verified, at the reference's own count.
    spec, peer, tests = turn_with_tests(buyer, node, reference_endpoint.iperf3_port, 3)
    assert post(node, spec, [throughput(tests, peer)]).status_code == 200
    assert Sample.objects.get(run_id=spec["run_id"]).evidence == "platform-verified"


def test_only_a_shared_loopback_address_is_left_out_of_the_withheld_check(
        enrol_node: Any) -> None:
    from jobs.services import intake

    a, b = enrol_node("hz-a"), enrol_node("hz-b")  # a one-machine fleet: both on 127.0.0.1
    assert intake._exclusive(a.node, a.node.known_addresses()) == frozenset()
    # A twin enrolled at the node's network address does not blind the check.
    c, d = enrol_node("hz-c", address="10.0.0.5"), enrol_node("hz-d", address="10.0.0.5")
    assert "10.0.0.5" in intake._exclusive(c.node, c.node.known_addresses())
    assert d.node.pk != c.node.pk and b.node.pk != a.node.pk
