"""A user-space TCP relay for the lab: forwards connections, optionally adding latency.

netem is not available on these kernels, so added latency is emulated here: every chunk is
held for half the delay in each direction, so a round trip through the relay takes
``delay`` longer. What it can and cannot emulate:

* TCP round trips through it (echo RTT, request/response) see the added latency.
* It terminates TCP: a bulk transfer through it sees the delay once, but the sender's
  congestion window and the bandwidth-delay product are those of the local hops, so it
  does not reproduce how TCP throughput suffers on a long fat link.
* ICMP (ping, tracepath) does not go through it and keeps the raw link's RTT.

It also joins namespaces to the platform without routing: a listener inside a lab host's
namespace can forward to a unix socket that a root-namespace server listens on.

    python -m tests.lab.relay --map 10.213.0.9:17001=127.0.0.1:7007 --delay-ms 8
    python -m tests.lab.relay --map 127.0.0.1:8000=unix:/run/lab/api.sock
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import socket
import time
from dataclasses import dataclass

CHUNK = 256 * 1024
SPIN = 0.003  # seconds


@dataclass(frozen=True)
class Address:
    host: str = ""
    port: int = 0
    path: str = ""  # a unix socket

    @classmethod
    def parse(cls, text: str) -> Address:
        if text.startswith("unix:"):
            return cls(path=text[5:])
        host, _, port = text.rpartition(":")
        return cls(host=host.strip("[]"), port=int(port))

    async def connect(self) -> tuple[asyncio.StreamReader, asyncio.StreamWriter]:
        if self.path:
            return await asyncio.open_unix_connection(self.path)
        return await asyncio.open_connection(self.host, self.port)


async def pump(reader: asyncio.StreamReader, writer: asyncio.StreamWriter, delay: float) -> None:
    """Copy one direction, each chunk released ``delay`` seconds after it arrived."""
    queue: asyncio.Queue[tuple[float, bytes]] = asyncio.Queue(maxsize=256)

    async def deliver() -> None:
        while True:
            due, data = await queue.get()
            if not data:
                break
            # epoll rounds timeouts up to whole milliseconds: sleep short, then spin the rest,
            # or every hop would add up to a millisecond of its own.
            wait = due - time.monotonic()
            if wait > SPIN:
                await asyncio.sleep(wait - SPIN)
            while time.monotonic() < due:
                pass
            writer.write(data)
            await writer.drain()

    sender = asyncio.create_task(deliver())
    try:
        while data := await reader.read(CHUNK):
            if delay:
                await queue.put((time.monotonic() + delay, data))
            else:
                writer.write(data)
                await writer.drain()
        await queue.put((0.0, b""))
        await sender
    except (ConnectionError, asyncio.CancelledError):
        sender.cancel()
    finally:
        with contextlib.suppress(Exception):
            writer.write_eof()


def _nodelay(writer: asyncio.StreamWriter) -> None:
    sock = writer.get_extra_info("socket")
    if sock is not None and sock.family in (socket.AF_INET, socket.AF_INET6):
        sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)


def handler(target: Address, delay_s: float):  # type: ignore[no-untyped-def]
    half = delay_s / 2

    async def handle(client_r: asyncio.StreamReader, client_w: asyncio.StreamWriter) -> None:
        try:
            upstream_r, upstream_w = await target.connect()
        except OSError:
            client_w.close()
            return
        _nodelay(client_w)
        _nodelay(upstream_w)
        await asyncio.gather(pump(client_r, upstream_w, half), pump(upstream_r, client_w, half),
                             return_exceptions=True)
        client_w.close()
        upstream_w.close()

    return handle


async def serve(mappings: list[tuple[Address, Address]], delay_s: float) -> None:
    servers = []
    for listen, target in mappings:
        if listen.path:
            servers.append(await asyncio.start_unix_server(handler(target, delay_s), listen.path))
        else:
            servers.append(await asyncio.start_server(handler(target, delay_s), listen.host,
                                                      listen.port, reuse_address=True))
    print("relay ready", flush=True)
    await asyncio.gather(*(s.serve_forever() for s in servers))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--map", action="append", required=True, metavar="LISTEN=TARGET")
    parser.add_argument("--delay-ms", type=float, default=0.0, help="added round-trip latency")
    args = parser.parse_args()
    mappings = [(Address.parse(m.split("=", 1)[0]), Address.parse(m.split("=", 1)[1]))
                for m in args.map]
    asyncio.run(serve(mappings, args.delay_ms / 1000.0))


if __name__ == "__main__":
    main()
