"""A TCP echo server: the peer side of TCP RTT measurements (`benchctl echo-server`).

Reference endpoints run one beside `iperf3 -s`; it echoes every byte back at once. A client
may first send one line, ``BENCH-TOKEN <token>``: the run's token, handed out by the
platform. With ``--log FILE`` the server then keeps its own record of that connection (one
JSON line when it closes: token, client address, start time, and the round trips it timed
itself, from each echo it sent to the next byte that came back). The platform compares a
host's reported TCP RTT with that record, so the host cannot claim a shorter path.
"""

from __future__ import annotations

import asyncio
import json
import socket
import statistics
import time
from pathlib import Path
from typing import Any

TOKEN_PREFIX = b"BENCH-TOKEN "
MAX_TOKEN_LINE = 256
MAX_RECORDED = 1000  # round trips kept per connection (ping_count is at most 1000)


async def _read_token(reader: asyncio.StreamReader, data: bytes) -> tuple[str, bytes]:
    """The token line at the start of ``data`` (read more until its newline), and the rest."""
    while b"\n" not in data and len(data) < MAX_TOKEN_LINE:
        more = await reader.read(MAX_TOKEN_LINE)
        if not more:
            break
        data += more
    line, _, rest = data.partition(b"\n")
    return line[len(TOKEN_PREFIX):].decode("ascii", "replace").strip()[:128], rest


class EchoServer:
    def __init__(self, log_path: str | None = None) -> None:
        self.log_path = Path(log_path) if log_path else None

    async def handle(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        sock = writer.get_extra_info("socket")
        if sock is not None:
            sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        peer = writer.get_extra_info("peername") or ("", 0)
        started = time.time()
        token = ""
        rtts: list[float] = []
        sent_at: float | None = None
        try:
            data = await reader.read(65536)
            if data.startswith(TOKEN_PREFIX[:len(data)]) and data:
                token, data = await _read_token(reader, data)
            while True:
                if data:
                    now = time.perf_counter()
                    if sent_at is not None:
                        rtts.append((now - sent_at) * 1000.0)
                    writer.write(data)
                    await writer.drain()
                    sent_at = time.perf_counter()
                data = await reader.read(65536)
                if not data:
                    break
        except ConnectionError:
            pass
        finally:
            writer.close()
            if token and self.log_path is not None:
                self.record({"token": token, "client": str(peer[0]), "started": started,
                             "round_trips": len(rtts), "rtts_ms": [round(r, 4) for r in rtts]
                             [:MAX_RECORDED], "median_ms": statistics.median(rtts) if rtts else None})

    def record(self, entry: dict[str, Any]) -> None:
        assert self.log_path is not None
        with self.log_path.open("a") as log:
            log.write(json.dumps(entry) + "\n")


async def serve(host: str, port: int, log_path: str | None = None) -> None:
    server = await asyncio.start_server(EchoServer(log_path).handle, host, port,
                                        reuse_address=True)
    async with server:
        await server.serve_forever()


def run(host: str, port: int, log_path: str | None = None) -> None:
    asyncio.run(serve(host, port, log_path))
