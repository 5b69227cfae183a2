"""`benchctl probe`: measure candidate nodes from the buyer's own site.

For each node the platform hands out a token that opens that node's test server once
(POST /api/v1/sites/{id}/probes). This side of the session (contract/site_probe.py) is the
buyer's own and is what is stored:

- TCP RTT: from this side's echo of the node's nonce k (with a fresh challenge) to the
  arrival of nonce k + 1, which must carry that challenge: one full round trip that the node
  can delay, never shorten. The node's own timings are shown beside them, not stored.
- throughput both ways with iperf3 against the node's one-off, authenticated server: upload
  is what this client pushed and the node acknowledged (the smaller of its sent count and
  the receiver's, so a host cannot raise it by reporting more), download what it received.
- the route: tracepath's hops from here.
"""

from __future__ import annotations

import json
import socket
import time
from dataclasses import dataclass, field
from typing import Any

from benchmarks import runner
from benchmarks.parsers.iperf3 import Iperf3Error, Iperf3Result, parse_iperf3
from benchmarks.parsers.tracepath import parse_tracepath
from benchmarks.probes.network import turn_credential
from contract import site_probe as sp
from workers.errors import CliError
from workers.i18n import _

GBIT = 1e9
CONNECT_TIMEOUT_S = 5.0
# The node's one-off server starts when it answers READY; a test sent a moment before it
# listens is refused: try again, briefly.
REFUSED_RETRIES = 25  # 0.2 s apart: a loaded host starts it within 5 s


class Busy(Exception):
    """The node's test server is in another buyer's session for ``seconds`` more."""

    def __init__(self, seconds: int) -> None:
        super().__init__(seconds)
        self.seconds = seconds


@dataclass
class Measured:
    rtts_ms: list[float] = field(default_factory=list)  # this side's timings: stored
    node_rtts_ms: list[float] = field(default_factory=list)  # the node's claim: shown
    upload: Iperf3Result | None = None
    download: Iperf3Result | None = None
    hops: list[dict[str, Any]] = field(default_factory=list)
    hop_count: int | None = None

    def body(self) -> dict[str, Any]:
        """What is posted to the platform (POST /api/v1/probes/{id})."""
        up = min(self.upload.sender_bps, self.upload.receiver_bps) if self.upload else None
        return {"rtts_ms": self.rtts_ms,
                "upload_gbps": round(up / GBIT, 6) if up is not None else None,
                "download_gbps": round(self.download.receiver_bps / GBIT, 6)
                if self.download else None,
                "cookies": [r.cookie for r in (self.upload, self.download) if r and r.cookie],
                "hops": self.hops, "hop_count": self.hop_count}


class GateSession:
    """One session with a node's test server, over one TCP connection."""

    def __init__(self, host: str, port: int) -> None:
        try:
            self.sock = socket.create_connection((host, port), timeout=CONNECT_TIMEOUT_S)
        except OSError as exc:
            raise CliError(_("cannot reach the node's test server at {address}: {error} (its "
                             "provider can check that the node worker runs and the port is "
                             "open)").format(address=f"{host}:{port}", error=exc)) from None
        self.sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        self.sock.settimeout(sp.BOUNDS["session_seconds"])
        self.reader = self.sock.makefile("rb")
        self.host = host

    def close(self) -> None:
        self.reader.close()
        self.sock.close()

    def send(self, text: str) -> None:
        self.sock.sendall(text.encode())

    def line(self) -> str:
        raw = self.reader.readline(sp.MAX_LINE)
        if not raw:
            raise CliError(_("the node's test server closed the session"))
        text = raw.decode("ascii", "replace").strip()
        if text.startswith(sp.REFUSED):
            raise CliError(_("the node's test server refused the probe: {why}; ask for a new "
                             "token (run benchctl probe again)").format(
                                 why=text[len(sp.REFUSED):].strip()))
        if text.startswith(sp.BUSY):
            words = text.split()
            raise Busy(int(words[1]) if len(words) > 1 and words[1].isdigit() else 1)
        return text

    def round_trips(self, token: str, count: int) -> tuple[list[float], list[float]]:
        """This side's round trips and the node's own, in ms."""
        self.send(f"{sp.PROBE} {token} {count}\n")
        answered_at: list[float] = []
        arrived_at: list[float] = []
        challenge = sp.NO_CHALLENGE
        while True:
            text = self.line()
            now = time.perf_counter()
            if text.startswith(sp.RTTS):
                node = [float(r) for r in json.loads(text[len(sp.RTTS):])]
                return sp.buyer_round_trips(answered_at, arrived_at), node
            nonce = sp.parse_nonce_line(text)
            if nonce.challenge != challenge:
                # Sent before this side's answer arrived: a shortened round trip.
                raise CliError(_("the node's test server answered before it could have: its "
                                 "round trips are not timed; report the node to the platform"))
            arrived_at.append(now)
            challenge = sp.fresh()
            answer = sp.answer_line(nonce.nonce, challenge)
            # Stamped before the send, as ping does: on loopback the node can answer inside
            # this side's send call, and a stamp after it would cut the round trip short.
            answered_at.append(time.perf_counter())
            self.send(answer)

    def iperf3(self, username: str, token: str, seconds: int, reverse: bool) -> Iperf3Result:
        port, key = self.iperf3_ready()
        return self.iperf3_test(port, key, username, token, seconds, reverse)

    def iperf3_ready(self) -> tuple[int, str]:
        """The node's one-off iperf3 server started: its port and public key."""
        self.send(f"{sp.IPERF3}\n")
        words = self.line().split()
        if len(words) != 3 or words[0] != sp.READY:
            raise CliError(_("the node's test server did not start its iperf3 server"))
        return int(words[1]), bytes.fromhex(words[2]).decode()

    def iperf3_test(self, port: int, key: str, username: str, token: str, seconds: int,
                    reverse: bool) -> Iperf3Result:
        argv = ["iperf3", "-J", "-c", self.host, "-p", str(port), "-t", str(seconds),
                "-O", "1", "--connect-timeout", "3000", *(["-R"] if reverse else [])]
        credential = {"username": username, "password": token, "public_key": key}
        try:
            with turn_credential(credential) as (auth, env):
                for attempt in range(REFUSED_RETRIES):
                    done = runner.run(argv + auth, timeout=seconds + 20, env=env)
                    try:
                        return parse_iperf3(done.stdout)
                    except Iperf3Error as exc:
                        if "Connection refused" not in str(exc) or attempt == REFUSED_RETRIES - 1:
                            raise CliError(_("iperf3 to the node failed: {error}").format(
                                error=exc)) from None
                        time.sleep(0.2)
        except runner.CommandNotFound:
            raise CliError(_("iperf3 is not installed here: apt-get install iperf3")) from None
        finally:
            self.line()  # SERVED: the node's server has its record of the test
        raise AssertionError("unreachable")

    def done(self) -> None:
        self.send(f"{sp.DONE}\n")
        self.line()  # BYE: the node's record is with the platform


def route(host: str) -> tuple[list[dict[str, Any]], int | None]:
    try:
        done = runner.run(["tracepath", "-n", "-m", "30", "--", host], timeout=90)
    except (runner.CommandNotFound, runner.CommandTimeout):
        return [], None
    result = parse_tracepath(done.stdout)
    return ([{"ttl": h.ttl, "host": h.host, "rtt_ms": h.rtt_ms, "no_reply": h.no_reply}
             for h in result.hops], result.hop_count)


def measure(issued: dict[str, Any], seconds: int, with_route: bool = True) -> Measured:
    """One node, from here: RTT, upload, download (and the route)."""
    session = GateSession(issued["host"], int(issued["port"]))
    try:
        measured = Measured()
        measured.rtts_ms, measured.node_rtts_ms = session.round_trips(
            issued["token"], int(issued["round_trips"]))
        measured.upload = session.iperf3(issued["username"], issued["token"], seconds, False)
        measured.download = session.iperf3(issued["username"], issued["token"], seconds, True)
        session.done()
    finally:
        session.close()
    if with_route:
        measured.hops, measured.hop_count = route(issued["host"])
    return measured
