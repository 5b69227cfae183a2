"""#30: a reference's echo server is public. Before, it took any number of connections and
kept an idle one for ever: anyone could hold it open until the nodes' RTT tests found it full.
The real server, on loopback, in a thread of its own."""

from __future__ import annotations

import asyncio
import socket
import threading
import time
from collections.abc import Iterator

import pytest

from lab.procs import free_port
from workers.host.echo_server import EchoServer, serve


@pytest.fixture
def echo() -> Iterator[tuple[EchoServer, int]]:
    server, port = EchoServer(per_address=2, connections=3, idle_s=0.5), free_port()
    loop = asyncio.new_event_loop()
    task = loop.create_task(serve("127.0.0.1", port, server=server))
    thread = threading.Thread(target=loop.run_forever, daemon=True)
    thread.start()
    deadline = time.monotonic() + 5
    while time.monotonic() < deadline:
        try:
            socket.create_connection(("127.0.0.1", port), timeout=1).close()
            break
        except OSError:
            time.sleep(0.05)
    time.sleep(0.1)  # the probe connection above is closed and counted out
    yield server, port
    loop.call_soon_threadsafe(task.cancel)
    loop.call_soon_threadsafe(loop.stop)
    thread.join(5)


def closed_at_once(sock: socket.socket) -> bool:
    sock.settimeout(2)
    try:
        return sock.recv(1) == b""
    except ConnectionResetError:
        return True


def test_one_address_holds_a_few_connections_and_more_are_closed_at_once(
        echo: tuple[EchoServer, int]) -> None:
    server, port = echo
    held = [socket.create_connection(("127.0.0.1", port)) for _ in range(2)]
    for sock in held:  # each answers (an echo)
        sock.sendall(b"x")
        assert sock.recv(1) == b"x"
    extra = socket.create_connection(("127.0.0.1", port))
    assert closed_at_once(extra) and server.refused == 1
    held[0].close()
    time.sleep(0.1)
    again = socket.create_connection(("127.0.0.1", port))  # a place is free again
    again.sendall(b"y")
    assert again.recv(1) == b"y"
    for sock in (held[1], again, extra):
        sock.close()


def test_a_connection_that_sends_nothing_is_closed_after_the_idle_time(
        echo: tuple[EchoServer, int]) -> None:
    server, port = echo
    idle = socket.create_connection(("127.0.0.1", port))
    start = time.monotonic()
    assert closed_at_once(idle)  # within the recv's 2 s: the server's 0.5 s idle time
    assert 0.4 < time.monotonic() - start < 2
    # A token line left unfinished is idle too: no half-open measurement holds a place.
    half = socket.create_connection(("127.0.0.1", port))
    half.sendall(b"BENCH-TOKEN abc")
    assert closed_at_once(half)
    time.sleep(0.1)
    assert server.open == {}
    idle.close()
    half.close()
