"""A TCP echo server: the reference's side of TCP RTT measurements (`benchctl echo-server`).

Reference endpoints run one beside `iperf3 -s`. Two modes, chosen by the first line:

- ``BENCH-TOKEN <token> <count>``: a run's measurement, which the reference paces and
  times itself. It sends ``count + 1`` unpredictable nonces, one at a time, each when the
  answer to the previous one came back, and times each from its own send to the client's
  echo of exactly that nonce (the first is dropped: it also pays for the accept). The
  client can only answer what it has received, so it can delay a round trip, never
  shorten one. The server then tells the client what it timed (``RTTS [..]``) and, with
  ``--log FILE``, keeps its own record: token, the client's address as the server saw it,
  start time and the round trips. The platform stores the figure from that record.
- Anything else: every byte is echoed back at once (the lab's relay tests).

A reference is public: it holds at most MAX_PER_ADDRESS connections from one address and
MAX_CONNECTIONS in all (one more is closed at once), and closes a connection that sends
nothing for IDLE_S, so nobody holds it open for the nodes' tests to find it full.
"""

from __future__ import annotations

import asyncio
import json
import secrets
import socket
import statistics
import time
from pathlib import Path
from typing import Any

TOKEN_PREFIX = b"BENCH-TOKEN "
RTTS_PREFIX = b"RTTS "
MAX_TOKEN_LINE = 256
MAX_ROUND_TRIPS = 1000  # ping_count is at most 1000
DEFAULT_ROUND_TRIPS = 20  # a client that names no count
NONCE_BYTES = 8  # sent as 16 hex digits and a newline
ANSWER_TIMEOUT_S = 5.0  # a round trip longer than this ends the measurement
# Eight nodes behind one address (a NAT) measure at once; one client needs one connection.
MAX_PER_ADDRESS = 8
MAX_CONNECTIONS = 512
IDLE_S = 10.0


async def _read_line(reader: asyncio.StreamReader, data: bytes) -> bytes:
    """The first line of ``data`` (reading more until its newline)."""
    while b"\n" not in data and len(data) < MAX_TOKEN_LINE:
        more = await reader.read(MAX_TOKEN_LINE)
        if not more:
            break
        data += more
    return data.partition(b"\n")[0]


def parse_token_line(line: bytes) -> tuple[str, int]:
    """The run's token and how many round trips it asks for (bounded)."""
    words = line[len(TOKEN_PREFIX):].decode("ascii", "replace").split()
    token = words[0][:128] if words else ""
    try:
        count = int(words[1]) if len(words) > 1 else DEFAULT_ROUND_TRIPS
    except ValueError:
        count = DEFAULT_ROUND_TRIPS
    return token, max(1, min(count, MAX_ROUND_TRIPS))


class EchoServer:
    def __init__(self, log_path: str | None = None, per_address: int = MAX_PER_ADDRESS,
                 connections: int = MAX_CONNECTIONS, idle_s: float = IDLE_S) -> None:
        self.log_path = Path(log_path) if log_path else None
        self.per_address, self.connections, self.idle_s = per_address, connections, idle_s
        self.open: dict[str, int] = {}  # connections held now, by client address
        self.refused = 0

    async def handle(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        peer = writer.get_extra_info("peername") or ("", 0)
        address = str(peer[0])
        if self.open.get(address, 0) >= self.per_address \
                or sum(self.open.values()) >= self.connections:
            self.refused += 1
            writer.close()
            return
        self.open[address] = self.open.get(address, 0) + 1
        sock = writer.get_extra_info("socket")
        if sock is not None:
            sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        try:
            data = await self.read(reader)
            if data and data.startswith(TOKEN_PREFIX[:len(data)]):
                line = await asyncio.wait_for(_read_line(reader, data), self.idle_s)
                token, count = parse_token_line(line)
                await self.measure(reader, writer, token, count, address)
            else:
                await self.echo(reader, writer, data)
        except (TimeoutError, ConnectionError, asyncio.IncompleteReadError):
            pass
        finally:
            self.open[address] -= 1
            if not self.open[address]:
                del self.open[address]
            writer.close()

    async def read(self, reader: asyncio.StreamReader) -> bytes:
        """What the client sent next; a client silent for idle_s is closed (TimeoutError)."""
        return await asyncio.wait_for(reader.read(65536), self.idle_s)

    async def echo(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter,
                   data: bytes) -> None:
        while data:
            writer.write(data)
            await writer.drain()
            data = await self.read(reader)

    async def measure(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter,
                      token: str, count: int, client: str) -> None:
        started = time.time()
        rtts: list[float] = []
        try:
            for _ in range(count + 1):
                nonce = secrets.token_hex(NONCE_BYTES).encode() + b"\n"
                sent_at = time.perf_counter()
                writer.write(nonce)
                await writer.drain()
                answer = await asyncio.wait_for(reader.readexactly(len(nonce)), ANSWER_TIMEOUT_S)
                if answer != nonce:
                    break  # not an echo of what was sent: nothing after it is timed
                rtts.append((time.perf_counter() - sent_at) * 1000.0)
        finally:
            # Recorded whether or not the client stayed: what was timed is the evidence.
            timed = [round(r, 4) for r in rtts[1:]]
            if token and self.log_path is not None:
                self.record({"token": token, "client": client, "started": started,
                             "paced_by": "reference", "round_trips": len(timed),
                             "rtts_ms": timed,
                             "median_ms": statistics.median(timed) if timed else None})
        writer.write(RTTS_PREFIX + json.dumps(timed).encode() + b"\n")
        await writer.drain()

    def record(self, entry: dict[str, Any]) -> None:
        assert self.log_path is not None
        with self.log_path.open("a") as log:
            log.write(json.dumps(entry) + "\n")


async def serve(host: str, port: int, log_path: str | None = None,
                server: EchoServer | None = None) -> None:
    handler = (server or EchoServer(log_path)).handle
    listening = await asyncio.start_server(handler, host, port, reuse_address=True)
    async with listening:
        await listening.serve_forever()


def run(host: str, port: int, log_path: str | None = None) -> None:
    asyncio.run(serve(host, port, log_path))
