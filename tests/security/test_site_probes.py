"""A buyer's probe from their own site: the node's test server opens to a valid token of its
own, once, one session at a time; the figures stored are what the buyer's CLI measured; a
site's figures are its owner's alone.

Real parts: the live server and PostgreSQL, node worker processes on loopback (each with its
test server, workers/host/probe_gate.py, and its one-off authenticated `iperf3 -s`), and
`benchctl probe` as a subprocess, or the buyer's session (workers/buyer/probe.py) in-process.
"""

from __future__ import annotations

import contextlib
import json
import socket
import statistics
import time
from datetime import timedelta
from typing import Any

import pytest
import requests
from django.utils import timezone

from benchmarks import runner
from benchmarks.probes.network import tcp_echo_rtts
from contract import site_probe as sp
from jobs.models import SiteProbe
from lab import procs
from tests.workers.test_cli import benchctl
from workers.buyer import probe as probing
from workers.errors import CliError

pytestmark = pytest.mark.slow


def node_with_test_server(enrol_node: Any, worker_factory: Any, live_server: Any,
                          *names: str) -> list[Any]:
    nodes = [enrol_node(name, api_url=live_server.url, address="127.0.0.1",
                        iperf3_port=procs.node_ports()) for name in names]
    worker_factory.many([(n.config_path, f"w-{n.node.name}") for n in nodes])
    for n in nodes:
        port = sp.gate_port(n.node.iperf3_port)
        procs.wait_for(lambda port=port: _listening(port), 20, "the node's test server")
    return nodes


def _listening(port: int) -> bool:
    try:
        socket.create_connection(("127.0.0.1", port), timeout=1).close()
        return True
    except OSError:
        return False


def site(live_server: Any, buyer: Any, name: str = "Hangzhou office") -> dict[str, Any]:
    response = requests.post(f"{live_server.url}/api/v1/sites", headers=buyer.headers,
                             json={"name": name, "city": "杭州"}, timeout=10)
    assert response.status_code == 201, response.text
    return dict(response.json())


def tokens(live_server: Any, buyer: Any, site_id: int, nodes: list[int]) -> list[dict[str, Any]]:
    response = requests.post(f"{live_server.url}/api/v1/sites/{site_id}/probes",
                             headers=buyer.headers, json={"nodes": nodes}, timeout=10)
    assert response.status_code == 201, response.text
    return list(response.json()["probes"])


def opening(port: int, token: str) -> str:
    """The node's test server's first answer to a session under ``token``."""
    with socket.create_connection(("127.0.0.1", port), timeout=10) as sock:
        sock.sendall(f"PROBE {token} 3\n".encode())
        return sock.makefile("rb").readline().decode().strip()


def outsider_test(port: int) -> str:
    """An iperf3 client without the session's credential: the error it gets (a test sent
    before the one-off server listens is refused and tried again, as the CLI does)."""
    for _ in range(50):
        error = json.loads(runner.run(["iperf3", "-J", "-c", "127.0.0.1", "-p", str(port),
                                       "-t", "1", "--connect-timeout", "2000"], 30).stdout
                           or "{}").get("error", "")
        if "Connection refused" not in error:
            return str(error)
        time.sleep(0.2)
    return "refused"


# Compares the CLI's round trips with the node's own on loopback: measured alone.
@pytest.mark.serial
def test_benchctl_probe_stores_what_the_buyer_measured_and_the_node_confirms(
        live_server: Any, buyer: Any, other_buyer: Any, enrol_node: Any,
        worker_factory: Any) -> None:
    (node,) = node_with_test_server(enrol_node, worker_factory, live_server, "hz-1")
    office = site(live_server, buyer)
    assert office["city"] == "Hangzhou"
    env = {"BENCH_URL": live_server.url, "BENCH_TOKEN": buyer.token}

    done = benchctl("probe", "--site", "Hangzhou office", "--nodes", str(node.node.pk),
                    "--seconds", "1", "--format", "json", env=env)
    assert done.returncode == 0, done.stdout + done.stderr
    (row,) = json.loads(done.stdout[done.stdout.index("["):])
    assert row["node"] == "hz-1" and row["confirmed"] is True
    assert 0 < row["rtt_ms"] < 50 and row["upload_gbps"] > 0.1 and row["download_gbps"] > 0.1
    assert row["hops"] == 1  # loopback: the node is the first hop

    probe = SiteProbe.objects.get(node=node.node)
    # The figure stored is the CLI's own timing, not the node's (which it shows beside).
    assert probe.rtts_ms and len(probe.rtts_ms) == int(sp.BOUNDS["round_trips"])
    assert probe.node_record is not None and len(probe.node_record["served"]) == 2
    # Both ends timed the same interleaved round trips: the CLI's are no fraction of the
    # node's (a stamp taken after the CLI's send read 7 us against the node's 75 us).
    assert probe.rtt_ms is not None
    assert probe.rtt_ms >= 0.2 * statistics.median(probe.node_record["rtts_ms"])
    assert {s["cookie"] for s in probe.node_record["served"]} == set(probe.cookies)

    detail = requests.get(f"{live_server.url}/api/v1/sites/{office['id']}",
                          headers=buyer.headers, timeout=10).json()
    assert [f["node_name"] for f in detail["figures"]] == ["hz-1"]
    assert detail["figures"][0]["upload_gbps"] == row["upload_gbps"]

    # Another buyer cannot see the site, its figures or its probe, nor write into them.
    for url in (f"/api/v1/sites/{office['id']}", f"/api/v1/probes/{probe.pk}"):
        other = requests.get(live_server.url + url, headers=other_buyer.headers, timeout=10)
        assert other.status_code == 404, other.text
    assert requests.get(f"{live_server.url}/api/v1/sites", headers=other_buyer.headers,
                        timeout=10).json() == []
    denied = requests.post(f"{live_server.url}/api/v1/sites/{office['id']}/probes",
                           headers=other_buyer.headers, json={"nodes": [node.node.pk]},
                           timeout=10)
    assert denied.status_code == 404
    # The CLI's answer to a site it does not have names the fix.
    missing = benchctl("probe", "--site", "Ningbo lab", "--nodes", str(node.node.pk), env=env)
    assert missing.returncode == 2 and "benchctl sites add" in missing.stderr


def peer_echo_beside_a_session(port: int) -> None:
    """A peer node's RTT echo (network.internode_rtt): no token, not held up by a buyer's
    session, and no more than an echo: bounded in length and in number at once."""
    assert len(tcp_echo_rtts("127.0.0.1", port, 3, greeting="ECHO 3")) == 3
    limit = int(sp.BOUNDS["max_round_trips"])
    with socket.create_connection(("127.0.0.1", port), timeout=10) as sock:
        sock.sendall(b"ECHO 999999\n" + b"x" * (limit + 50))
        reader = sock.makefile("rb")
        assert reader.readline() == b"OK\n"
        assert reader.read(limit + 1) == b"x" * (limit + 1)
        with contextlib.suppress(ConnectionResetError):  # closed with our extra bytes unread
            assert reader.read(1) == b""  # and no more: the server closed it
    held = [socket.create_connection(("127.0.0.1", port), timeout=10)
            for _ in range(int(sp.BOUNDS["echo_sessions"]) + 1)]
    try:
        answers = []
        for sock in held:
            sock.sendall(b"ECHO 5\n")
            answers.append(sock.makefile("rb").readline().decode().split()[0])
        assert answers == ["OK"] * int(sp.BOUNDS["echo_sessions"]) + ["BUSY"]
    finally:
        for sock in held:
            sock.close()


def test_the_node_test_server_opens_only_to_its_own_fresh_token_one_session_at_a_time(
        live_server: Any, buyer: Any, enrol_node: Any, worker_factory: Any) -> None:
    a, b = node_with_test_server(enrol_node, worker_factory, live_server, "hz-a", "hz-b")
    port_a, port_b = sp.gate_port(a.node.iperf3_port), sp.gate_port(b.node.iperf3_port)
    office = site(live_server, buyer)

    # No token, a made-up one: refused, and no iperf3 server is started for it.
    assert opening(port_a, "made-up-token").startswith("REFUSED")
    assert opening(port_a, "").startswith("REFUSED")
    assert not _listening(sp.probe_iperf3_port(a.node.iperf3_port))

    # A token for node A does not open node B (and is not used up by trying).
    (for_a,) = tokens(live_server, buyer, office["id"], [a.node.pk])
    refused = opening(port_b, for_a["token"])
    assert refused.startswith("REFUSED") and "not a probe token of this node" in refused

    # One session at a time: while A's session runs, a second client hears "busy", and
    # its token stays unused for later.
    (second,) = tokens(live_server, buyer, office["id"], [a.node.pk])
    first = probing.GateSession("127.0.0.1", port_a)
    try:
        first.round_trips(for_a["token"], 2)
        peer_echo_beside_a_session(port_a)
        with pytest.raises(probing.Busy) as busy:
            probing.measure(second, 1, with_route=False)
        assert 1 <= busy.value.seconds <= sp.BOUNDS["session_seconds"]
        assert SiteProbe.objects.get(pk=second["probe"]).claimed_at is None
        # Only the session's user gets an iperf3 test: a client without the password is
        # refused by the one-off server.
        port, key = first.iperf3_ready()
        assert "authorization" in outsider_test(port)
        # The refused outsider ended that one-off server unserved; it listens again, and
        # the buyer's test is not spoiled by whoever raced it to the port.
        served = first.iperf3_test(port, key, for_a["username"], for_a["token"], 1, False)
        assert served.receiver_bps > 0 and served.cookie
        first.done()
        assert SiteProbe.objects.get(pk=for_a["probe"]).node_record["served"][0]["cookie"] == (
            served.cookie)
    finally:
        first.close()

    # A used token is refused; an expired one too.
    assert "used already" in opening(port_a, for_a["token"])
    SiteProbe.objects.filter(pk=second["probe"]).update(
        expires_at=timezone.now() - timedelta(seconds=1))
    assert "ran out" in opening(port_a, second["token"])

    # The CLI says it in one line with the fix.
    with pytest.raises(CliError, match="ask for a new token"):
        probing.measure(for_a, 1, with_route=False)
