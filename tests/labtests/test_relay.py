"""The lab's relay adds the latency it is told to, to TCP round trips, and passes bytes intact."""

from __future__ import annotations

import socket
import statistics
import sys
import threading
import time
from pathlib import Path

import pytest

from benchmarks.probes.network import tcp_echo_rtts
from lab import procs
from lab import relay as lab_relay


@pytest.fixture
def echo(echo_port: int) -> int:
    return echo_port


def relay(tmp_path: Path, target: str, delay_ms: float) -> tuple[procs.Proc, int]:
    port = procs.free_port()
    proc = procs.start(f"relay-{port}", [sys.executable, "-m", "lab.relay", "--map",
                                         f"127.0.0.1:{port}={target}", "--delay-ms", str(delay_ms)],
                       tmp_path)
    procs.wait_for(lambda: procs.port_open("127.0.0.1", port), 10, "relay")
    return proc, port


# Round trips timed to a fraction of a millisecond: alone, not beside a busy test.
@pytest.mark.serial
@pytest.mark.parametrize("delay_ms", [5.0, 20.0])
def test_the_relay_adds_its_delay_to_tcp_round_trips(tmp_path: Path, echo: int,
                                                     delay_ms: float) -> None:
    direct = statistics.median(tcp_echo_rtts("127.0.0.1", echo, 20))
    proc, port = relay(tmp_path, f"127.0.0.1:{echo}", delay_ms)
    try:
        relayed = statistics.median(tcp_echo_rtts("127.0.0.1", port, 20))
    finally:
        proc.stop()
    assert relayed - direct == pytest.approx(delay_ms, abs=max(0.5, delay_ms * 0.05))


def test_bytes_arrive_intact_and_in_order_through_a_unix_socket_hop(tmp_path: Path,
                                                                   echo: int) -> None:
    sock_path = tmp_path / "hop.sock"
    inner = procs.start("relay-unix", [sys.executable, "-m", "lab.relay", "--map",
                                       f"unix:{sock_path}=127.0.0.1:{echo}"], tmp_path)
    procs.wait_for(sock_path.exists, 10, "unix relay")
    outer, port = relay(tmp_path, f"unix:{sock_path}", 0)
    payload = bytes(range(256)) * 4096  # 1 MiB
    try:
        with socket.create_connection(("127.0.0.1", port), timeout=10) as s:
            s.sendall(payload)
            s.shutdown(socket.SHUT_WR)
            received = b""
            while chunk := s.recv(65536):
                received += chunk
    finally:
        outer.stop()
        inner.stop()
    assert received == payload


def test_a_detour_waits_out_a_moment_in_which_its_destination_refuses() -> None:
    # As iperf3's server does between two tests: it listens anew for each.
    port = procs.free_port()
    listening = socket.socket()
    listening.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)

    def listen_late() -> None:
        time.sleep(0.3)
        listening.bind(("127.0.0.1", port))
        listening.listen(1)

    threading.Thread(target=listen_late, daemon=True).start()
    started = time.monotonic()
    with lab_relay.connect_onward(("127.0.0.1", port), mark=0) as onward:
        assert onward.getpeername() == ("127.0.0.1", port)
    assert time.monotonic() - started >= 0.25
    listening.close()


def test_a_detour_gives_up_on_a_destination_that_keeps_refusing(
        monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(lab_relay, "REFUSED_RETRY_S", 0.2)
    with pytest.raises(ConnectionRefusedError):
        lab_relay.connect_onward(("127.0.0.1", procs.free_port()), mark=0)
