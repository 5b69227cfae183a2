"""Not a scanner: the addresses a run spec names reach a tool only as one literal operand,
and a buyer is not told what another node's network answered (real ping, tracepath and
iperf3 on loopback)."""

from __future__ import annotations

import socket
from typing import Any

import pytest

from benchmarks import runner
from benchmarks.probes import network
from benchmarks.probes.base import MeshNode, Peer, ProbeContext, ProbeError
from benchmarks.probes.network import NetworkProbe
from contract.suites import PARAMS


def probe() -> NetworkProbe:
    params = {name: float(p.default) for name, p in PARAMS.items()}
    return NetworkProbe(ProbeContext(params=params | {"iperf3_duration": 1.0, "iperf3_omit": 0.0}))


def closed_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])  # nothing listens once it is closed


@pytest.mark.parametrize("host", ["-fI", "--flood", "127.0.0.1 -f", "10.0.0.1\n-p", "", "a..b"])
def test_an_option_like_or_malformed_address_never_reaches_a_tool(host: str) -> None:
    with pytest.raises(ProbeError, match="not an IP address or host name"):
        Peer.from_dict({"name": "node:evil", "host": host})
    with pytest.raises(ProbeError, match="not an IP address or host name"):
        MeshNode.from_dict({"rank": 1, "name": "evil", "host": host or "-x", "iperf3_port": 5201})


def test_tools_get_the_address_after_the_end_of_options(monkeypatch: Any) -> None:
    seen: list[list[str]] = []
    real = runner.run

    def recording(argv: list[str], **kwargs: Any) -> Any:
        seen.append(list(argv))
        return real(argv, **kwargs)

    monkeypatch.setattr(runner, "run", recording)
    peer = Peer.from_dict({"name": "reference:hangzhou:ref1", "host": "127.0.0.1"})
    assert probe().ping(peer).received > 0
    assert probe().tracepath(peer).reached
    assert [argv[-2:] for argv in seen] == [["--", "127.0.0.1"], ["--", "127.0.0.1"]]


def test_a_failed_link_test_does_not_tell_the_buyer_what_the_other_network_answered(
        monkeypatch: Any) -> None:
    monkeypatch.setattr(network, "BUSY_RETRIES", 1)  # a refused port is retried for ~27 s
    port = closed_port()
    node = MeshNode.from_dict({"rank": 1, "name": "sz-2", "host": "127.0.0.1", "iperf3_port": port})
    with pytest.raises(ProbeError) as raised:
        probe().iperf3(node.as_peer(), reverse=False)
    message = str(raised.value)
    assert message.startswith("iperf3 to node:sz-2 failed: its test server did not answer")
    for leak in ("refused", "unable to connect", str(port), "127.0.0.1"):
        assert leak not in message
    # The platform's own reference keeps the tool's words: they help its operators.
    reference = Peer(name="reference:hangzhou:ref1", host="127.0.0.1", iperf3_port=port)
    with pytest.raises(ProbeError, match="Connection refused"):
        probe().iperf3(reference, reverse=False)
