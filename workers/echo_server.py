"""A TCP echo server: the peer side of TCP RTT measurements (`benchctl echo-server`).

Reference endpoints run one beside `iperf3 -s`; it echoes every byte back at once.
"""

from __future__ import annotations

import asyncio
import socket


async def _echo(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
    sock = writer.get_extra_info("socket")
    if sock is not None:
        sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
    try:
        while data := await reader.read(65536):
            writer.write(data)
            await writer.drain()
    except ConnectionError:
        pass
    finally:
        writer.close()


async def serve(host: str, port: int) -> None:
    server = await asyncio.start_server(_echo, host, port, reuse_address=True)
    async with server:
        await server.serve_forever()


def run(host: str, port: int) -> None:
    asyncio.run(serve(host, port))
