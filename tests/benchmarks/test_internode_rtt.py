"""A link's RTT (network.internode_rtt): TCP round trips echoed by the peer's test server
(workers/host/probe_gate.py, run here on loopback), or ping where the peer has none."""

from __future__ import annotations

import asyncio
import socket
import threading
import time
from pathlib import Path

from benchmarks.probes.base import Peer, ProbeContext
from benchmarks.probes.network import NetworkProbe
from contract import site_probe as sp
from contract.site_probe import gate_port
from contract.suites import PARAMS
from lab import procs
from workers.host.api_client import NodeApi
from workers.host.probe_gate import ProbeGate

META = {"peer": "node:hz-2", "peer_host": "127.0.0.1"}


def probe() -> NetworkProbe:
    params = {name: float(p.default) for name, p in PARAMS.items()}
    return NetworkProbe(ProbeContext(params=params | {"ping_count": 5, "ping_interval": 0.2}))


def test_the_links_rtt_is_echoed_by_the_peers_test_server(tmp_path: Path) -> None:
    iperf3_port = procs.node_ports()
    # An echo never asks the platform: a closed port stands in for its API.
    gate = ProbeGate(NodeApi(f"http://127.0.0.1:{procs.free_port()}", "nk_0.none"),
                     "127.0.0.1", gate_port(iperf3_port), iperf3_port, tmp_path / "gate")
    threading.Thread(target=asyncio.run, args=(gate.serve(),), daemon=True).start()
    procs.wait_for(lambda: procs.port_open("127.0.0.1", gate_port(iperf3_port)), 10, "the gate")

    sample = probe().internode_rtt(Peer("node:hz-2", "127.0.0.1", iperf3_port), META)
    assert sample.metric == "network.internode_rtt" and sample.n == 5
    expected = META | {"tool": "tcp echo", "echo_port": iperf3_port + 1, "count": 5}
    assert {k: sample.metadata.get(k) for k in expected} == expected
    assert 0 < sample.value < 5.0  # loopback


def test_a_peer_without_a_test_server_is_pinged_and_the_figure_says_so() -> None:
    closed = procs.free_port()  # nothing listens on the port after it either, most likely:
    while procs.port_open("127.0.0.1", closed + 1):
        closed = procs.free_port()
    sample = probe().internode_rtt(Peer("node:hz-2", "127.0.0.1", closed), META)
    assert sample.metric == "network.internode_rtt" and sample.n == 5
    assert sample.metadata["tool"] == "ping" and 0 < sample.value < 5.0
    # And why it is ping's, kept with the figure.
    assert "Connection refused" in sample.metadata["echo_error"]


def test_a_test_server_that_answers_late_still_times_the_link_over_tcp(tmp_path: Path) -> None:
    # Its first connection refused (the server not up yet, or a saturated host): asked again
    # a second later, not pinged at once, so the figure stays TCP's.
    iperf3_port = procs.node_ports()
    gate = ProbeGate(NodeApi(f"http://127.0.0.1:{procs.free_port()}", "nk_0.none"),
                     "127.0.0.1", gate_port(iperf3_port), iperf3_port, tmp_path / "gate")
    later = threading.Timer(0.3, lambda: threading.Thread(
        target=asyncio.run, args=(gate.serve(),), daemon=True).start())
    assert not procs.port_open("127.0.0.1", gate_port(iperf3_port))
    later.start()
    sample = probe().internode_rtt(Peer("node:hz-2", "127.0.0.1", iperf3_port), META)
    later.join()
    assert sample.metadata["tool"] == "tcp echo" and sample.n == 5


def test_a_test_server_busy_for_seconds_is_asked_again_not_pinged(tmp_path: Path) -> None:
    # Every echo session of the peer's test server held for 4 s (on a saturated host, its
    # other peers' echoes stalled): it answers BUSY at once, three times within 2 s. The link
    # is asked again until it answers, and the figure stays TCP's (CI saw the fallback).
    iperf3_port = procs.node_ports()
    port = gate_port(iperf3_port)
    gate = ProbeGate(NodeApi(f"http://127.0.0.1:{procs.free_port()}", "nk_0.none"),
                     "127.0.0.1", port, iperf3_port, tmp_path / "gate")
    threading.Thread(target=asyncio.run, args=(gate.serve(),), daemon=True).start()
    procs.wait_for(lambda: procs.port_open("127.0.0.1", port), 10, "the gate")
    held = [socket.create_connection(("127.0.0.1", port), timeout=10)
            for _ in range(int(sp.BOUNDS["echo_sessions"]))]
    for sock in held:
        sock.sendall(b"ECHO 5\n")
        assert sock.makefile("rb").readline() == b"OK\n"
    def free() -> None:
        for sock in held:
            sock.close()

    release = threading.Timer(4.0, free)
    release.start()
    started = time.monotonic()
    sample = probe().internode_rtt(Peer("node:hz-2", "127.0.0.1", iperf3_port), META)
    release.join()
    assert sample.metadata["tool"] == "tcp echo" and sample.n == 5
    assert time.monotonic() - started >= 4.0  # it waited the sessions out
