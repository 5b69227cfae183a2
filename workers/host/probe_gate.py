"""The node's test server for buyers' probes from their own sites (`benchctl probe`).

It listens on contract.site_probe.gate_port(iperf3_port) of the enrolled address, beside the
node-to-node iperf3 server, and speaks contract/site_probe.py's protocol. What keeps it from
being an open test server:

- a session starts only with a buyer's probe token that the platform confirms is this node's,
  unused and unexpired (POST /api/v1/node/probes/claim uses it up): an outsider's made-up
  token, a token for another node and a used or old one are refused (REFUSED <why>);
- one session at a time: a second client gets BUSY with the seconds the first may still hold
  it, and its token is not used up;
- iperf3 runs only inside a session, as a one-off server (`iperf3 -s -1`) with iperf3's own
  authentication whose users file holds that probe's user alone (its password is the token),
  at most iperf3_tests times, each bounded in time; the whole session ends at
  session_seconds (contract/data/site_probe.yaml). A client without the password that
  races the buyer to it is refused and does not spoil the buyer's test or its record;
- a peer node of the same job may time its TCP round trips here (ECHO): bytes echoed, a
  bounded number, no token, nothing started.

What it times is the node's claim. The node's record (its round trips, the cookies its
server logged) goes to the platform at the end of the session, where it confirms the buyer's
own figures; the figures themselves are what the buyer's CLI measured.
"""

from __future__ import annotations

import asyncio
import hashlib
import json
import logging
import socket
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from benchmarks import runner
from contract import site_probe as sp
from contract.iperf3_server import ServerReport, json_objects, server_report
from workers.host.api_client import ApiError, NodeApi
from workers.host.iperf3_auth import PUBLIC, ensure_keys, server_args, write_users

log = logging.getLogger(__name__)
B = sp.BOUNDS
OMIT_S = 1  # the one second of TCP slow start each test leaves out (iperf3 -O)


@dataclass
class Session:
    probe: int
    username: str
    client: str
    deadline: float  # monotonic
    rtts_ms: list[float] = field(default_factory=list)
    served: list[dict[str, Any]] = field(default_factory=list)
    handed_in: bool = False


class ProbeGate:
    def __init__(self, api: NodeApi, bind: str, port: int, iperf3_port: int,
                 directory: Path) -> None:
        self.api, self.bind, self.port, self.iperf3_port = api, bind, port, iperf3_port
        self.directory = ensure_keys(directory)
        self.session: Session | None = None
        self.claiming = False
        self.echoing = 0

    async def handle(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        peer = writer.get_extra_info("peername") or ("", 0)
        sock = writer.get_extra_info("socket")
        if sock is not None:
            sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        try:
            words = (await self.line(reader)).split()
            if len(words) == 2 and words[0] == sp.ECHO:
                await self.echo(reader, writer, words[1])
                return
            if len(words) != 3 or words[0] != sp.PROBE:
                await self.say(writer, f"{sp.REFUSED} start with: PROBE <token> <count>")
                return
            if self.session is not None or self.claiming:
                left = self.session.deadline - time.monotonic() if self.session else B["session_seconds"]
                await self.say(writer, f"{sp.BUSY} {max(1, int(left))}")
                return
            self.claiming = True  # the claim is a request: a second client waits it out as busy
            try:
                claimed = await asyncio.get_running_loop().run_in_executor(
                    None, self.api.probe_claim, words[1][:128])
            except ApiError as exc:
                await self.say(writer, f"{sp.REFUSED} {exc.message}"[:300])
                return
            finally:
                self.claiming = False
            count = sp.bounded_count(int(words[2]) if words[2].isdigit() else int(B["round_trips"]))
            session = Session(int(claimed["probe"]), str(claimed["username"]), str(peer[0]),
                              time.monotonic() + B["session_seconds"])
            self.session = session
            try:
                await asyncio.wait_for(self.run_session(reader, writer, words[1], count),
                                       B["session_seconds"])
            finally:
                await self.end(session)
        except (TimeoutError, ConnectionError, asyncio.IncompleteReadError, sp.ProtocolError,
                UnicodeDecodeError):
            pass
        finally:
            writer.close()

    async def echo(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter,
                   count: str) -> None:
        """A peer node's RTT test: its bytes sent back, one at a time, count + 1 of them.
        Beside a buyer's session, never in its way; bounded in number and length."""
        if self.echoing >= B["echo_sessions"]:
            await self.say(writer, f"{sp.BUSY} 1")
            return
        self.echoing += 1
        try:
            await self.say(writer, sp.OK)
            for _ in range(sp.bounded_count(int(count) if count.isdigit() else 0) + 1):
                byte = await asyncio.wait_for(reader.readexactly(1), B["answer_seconds"])
                writer.write(byte)
                await writer.drain()
        finally:
            self.echoing -= 1

    async def line(self, reader: asyncio.StreamReader) -> str:
        raw = await asyncio.wait_for(reader.readline(), B["answer_seconds"])
        if not raw:
            raise ConnectionError("closed")
        return raw[:sp.MAX_LINE].decode("ascii").strip()

    async def say(self, writer: asyncio.StreamWriter, text: str) -> None:
        writer.write(text.encode() + b"\n")
        await writer.drain()

    async def run_session(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter,
                          token: str, count: int) -> None:
        assert self.session is not None
        await self.round_trips(reader, writer, count)
        tests = 0
        while True:
            command = await asyncio.wait_for(reader.readline(), B["session_seconds"])
            word = command.decode("ascii", "replace").strip()
            if word == sp.IPERF3 and tests < B["iperf3_tests"]:
                tests += 1
                await self.iperf3_test(writer, token)
            elif word == sp.DONE or not command:
                # Free before BYE: the buyer's next node (or another buyer) may come at once.
                await self.end(self.session)
                await self.say(writer, sp.BYE)
                return
            else:
                await self.say(writer, f"{sp.REFUSED} at most {int(B['iperf3_tests'])} iperf3 "
                                       "tests a session; then DONE")

    async def round_trips(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter,
                          count: int) -> None:
        """Nonces one at a time, each with the buyer's last challenge; timed to its echo."""
        assert self.session is not None
        timed, challenge = [], sp.NO_CHALLENGE
        for _ in range(count + 1):
            nonce = sp.fresh()
            sent_at = time.perf_counter()
            await self.say(writer, sp.nonce_line(nonce, challenge).rstrip("\n"))
            echoed, challenge = sp.parse_answer_line(await self.line(reader))
            if echoed != nonce:
                break  # not an echo of what was sent: nothing after it is timed
            timed.append(round((time.perf_counter() - sent_at) * 1000.0, 4))
        self.session.rtts_ms = timed[1:]  # the first also paid for the connection's start
        await self.say(writer, f"{sp.RTTS} {json.dumps(self.session.rtts_ms)}")

    async def iperf3_test(self, writer: asyncio.StreamWriter, token: str) -> None:
        """A one-off iperf3 server that lets in this probe's user alone, for one test."""
        assert self.session is not None
        user = self.session.username
        digest = hashlib.sha256(f"{{{user}}}{token}".encode()).hexdigest()
        write_users(self.directory / "users.csv", f"{user},{digest}\n")
        port = sp.probe_iperf3_port(self.iperf3_port)
        limit = max(1.0, min(B["max_iperf3_seconds"] + OMIT_S + 10,
                             self.session.deadline - time.monotonic()))
        argv = ["iperf3", "-s", "-1", "-J", "-B", self.bind, "-p", str(port),
                *server_args(self.directory)]
        ends = time.monotonic() + limit
        loop = asyncio.get_running_loop()
        key = (self.directory / PUBLIC).read_text().encode().hex()
        await self.say(writer, f"{sp.READY} {port} {key}")
        report = None
        try:
            # An outsider who races the buyer to the port (no password) is refused and the
            # one-off server goes on to serve the buyer, writing two reports: both are read
            # (served()). A client that goes away mid-test ends it unserved: it listens
            # again until a test is served or the time is up.
            while report is None and (left := ends - time.monotonic()) > 1:
                try:
                    result = await loop.run_in_executor(None, runner.run, argv, left)
                except runner.CommandTimeout:
                    break
                report = served(result.stdout)
        finally:
            write_users(self.directory / "users.csv", "")
        if report is not None:
            self.session.served.append({"cookie": report.cookie, "reverse": report.reverse,
                                        "gbps": round(report.own_bps / 1e9, 6)})
        await self.say(writer, f"{sp.SERVED} {report.cookie if report else 'none'}")

    async def end(self, session: Session) -> None:
        """The session's record handed in, its iperf3 user gone, the test server free."""
        await self.hand_in(session)
        write_users(self.directory / "users.csv", "")
        if self.session is session:
            self.session = None

    async def hand_in(self, session: Session) -> None:
        """The node's record to the platform, once a session."""
        if session.handed_in:
            return
        session.handed_in = True
        record = {"client": session.client, "rtts_ms": session.rtts_ms,
                  "served": session.served}
        try:
            await asyncio.get_running_loop().run_in_executor(
                None, self.api.probe_record, session.probe, record)
        except ApiError as exc:
            log.warning("probe %s: the record was not handed in: %s", session.probe, exc)

    async def serve(self) -> None:
        listening = await asyncio.start_server(self.handle, self.bind, self.port,
                                               reuse_address=True)
        async with listening:
            await listening.serve_forever()


def served(stdout: str) -> ServerReport | None:
    """The test a one-off iperf3 server ran, from its JSON reports (an error report for each
    client it refused before it); None when it ran none."""
    reports = (server_report(obj) for obj in json_objects(stdout)[0])
    return next((r for r in reports if r is not None), None)
