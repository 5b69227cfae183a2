"""Network probe: ICMP RTT and loss (ping), route (tracepath), TCP throughput (iperf3):
one stream both ways, and P parallel streams."""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import socket
import tempfile
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

from benchmarks import runner
from benchmarks.parsers.iperf3 import Iperf3Error, Iperf3Result, parse_iperf3
from benchmarks.parsers.ping import PingResult, parse_ping
from benchmarks.parsers.tracepath import TracepathResult, parse_tracepath
from benchmarks.probes.base import Peer, Probe, ProbeError
from contract import metrics
from contract.iperf3_server import ServerReport, json_objects, server_report
from contract.precision import repeat_to_precision
from contract.run_spec import MESH_PREFIX
from contract.sample import Sample, summarise
from contract.schedule import link_rounds
from contract.site_probe import ECHO, gate_port
from contract.suites import turn_seconds

GBIT = 1e9
# iperf3 -s serves one test at a time; another node may be using the reference endpoint,
# or it may be restarting (a refused connection): try again for a while before failing.
BUSY_RETRIES = 10
# "authorization failed": the reference's agent writes a granted turn into its server's
# users file within a pass of its loop (half a second); a test started before that is
# refused, and tried again soon: waiting the busy retry's half second after it held most
# of the demo's turns 0.5 s longer than their 2 s test (2.7 s against 2.2, stop 49).
AUTH_REFUSED = "authorization failed"
AUTH_RETRY_S = 0.1
QUICK_AUTH_RETRIES = 5  # then as a busy server, with every busy retry still to come
RETRYABLE = ("busy", "Connection refused", AUTH_REFUSED)
# The first line a reference's echo server reads: the run's token (workers/host/echo_server.py).
ECHO_TOKEN_PREFIX = "BENCH-TOKEN "  # noqa: S105 - a protocol keyword, not a secret
RTTS_PREFIX = b"RTTS "  # the reference's own timings, at the end of its test
MAX_ECHO_LINE = 64 << 10
# Tests this node served in one run, as its own server logged them (a 16-node job's matrix
# is 15 peers x a few repetitions).
MAX_SERVED = 64
MAX_SERVED_BYTES = 8 << 20
# After the last round: how long the node waits for its iperf3 server's reports of its
# peers' tests, at most, and how long its log must stay still once every peer's are in.
SERVED_WAIT_S, SERVED_QUIET_S = 15.0, 0.3


class NetworkProbe(Probe):
    name = "network"
    produces = metrics.family("network")

    def prepare(self) -> None:
        for tool, package in (("ping", "iputils-ping"), ("iperf3", "iperf3"),
                              ("tracepath", "iputils-tracepath")):
            if shutil.which(tool) is None:
                raise ProbeError(f"{tool} is not installed; install it (apt-get install {package})")
        if not self.ctx.peers and not self.ctx.multi_node:
            raise ProbeError("no peers to measure against: the region has no reference endpoint")
        if self.ctx.multi_node and not all(n.host for n in self.ctx.mesh):
            missing = [n.name for n in self.ctx.mesh if not n.host]
            raise ProbeError(f"node(s) {', '.join(missing)} enrolled without --address: other "
                             "nodes cannot reach them; enrol them again with --address")

    def run(self) -> list[Sample]:
        reps = int(self.param("repetitions"))
        rounds = link_rounds(len(self.ctx.mesh))
        steps = len(self.ctx.peers) * (2 + 3 * reps) + len(rounds)
        step = 0

        def next_step() -> None:
            nonlocal step
            step += 1
            self.ctx.report(self.name, min(step, steps), steps)

        samples: list[Sample] = []
        own = self.ctx.mesh[self.ctx.node_rank] if rounds else None
        served = served_log(own.host, own.iperf3_port) if own else None
        served_from = served.stat().st_size if served and served.exists() else 0
        for peer in self.ctx.peers:
            meta: dict[str, Any] = {"peer": peer.name, "peer_host": peer.host}
            next_step()
            samples += ping_samples(self.ping(peer), meta | self.ping_params())
            if peer.echo_port:
                samples.append(summarise("network.tcp_rtt", tcp_echo_rtts(
                    peer.host, peer.echo_port, int(self.param("ping_count")), token=peer.token),
                    meta | {"tool": "tcp echo", "echo_port": peer.echo_port}))
            next_step()
            samples += route_samples(self.tracepath(peer), meta | {"tool": "tracepath"})
            # The reference's iperf3 server is one node's at a time: the platform hands out
            # turns, one per test, so nodes measured at once take turns test by test and
            # reach the node-to-node stage together. The wait is kept with the figures, and
            # is not counted against the probe's time limit.
            waited = 0.0
            runs: dict[str, list[Iperf3Result]] = {}
            for kind, reverse, streams in (("forward", False, 1), ("reverse", True, 1),
                                           ("parallel", False, int(self.param("iperf3_parallel")))):
                def measure(peer: Peer = peer, reverse: bool = reverse,
                            streams: int = streams) -> Iperf3Result:
                    nonlocal waited
                    next_step()
                    wait = self.ctx.references.take(peer.name, self.test_seconds())
                    runner.extend_time_limit(wait)
                    waited += wait
                    try:
                        return self.iperf3(peer, reverse=reverse, streams=streams)
                    finally:
                        self.ctx.references.give_back(peer.name)

                runs[kind] = self.repeated(measure)
            waits = {"reference_wait_s": round(waited, 1)}
            samples += iperf3_samples(runs["forward"], runs["reverse"],
                                      meta | self.iperf3_params(runs["forward"][0]) | waits)
            samples.append(summarise(
                "network.tcp_throughput_parallel",
                [r.receiver_bps / GBIT for r in runs["parallel"]],
                meta | self.iperf3_params(runs["parallel"][0]) | cookies(runs["parallel"]) | waits))
        if rounds:
            self.ctx.barrier("network-start")  # every peer's iperf3 server is there
        for i, pairs in enumerate(rounds):
            next_step()
            for client, server in pairs:
                if client == self.ctx.node_rank:
                    samples += self.internode(self.ctx.mesh[server].as_peer())
            self.ctx.barrier(f"network-round-{i}")
        if served is not None:  # every peer's tests towards this node are over
            senders = {self.ctx.mesh[client].host for pairs in rounds
                       for client, server in pairs if server == self.ctx.node_rank}
            samples += served_samples(await_served(served, served_from, senders))
        return samples

    def internode(self, peer: Peer) -> list[Sample]:
        """This node's side of one link: RTT to the peer and throughput towards it."""
        meta: dict[str, Any] = {"peer": peer.name, "peer_host": peer.host}
        runs = self.repeated(lambda: self.iperf3(peer, reverse=False))
        samples = [summarise("network.internode_throughput",
                             [r.receiver_bps / GBIT for r in runs],
                             meta | self.iperf3_params(runs[0]) | cookies(runs) | losses(runs))]
        return samples + [self.internode_rtt(peer, meta)]

    def repeated(self, measure: Callable[[], Iperf3Result]) -> list[Iperf3Result]:
        """An iperf3 test repeated until its throughput's median is within the stated
        precision, or its maximum of repetitions (contract/precision.py)."""
        least = int(self.param("repetitions"))
        most = int(self.param("max_repetitions")) or 2 * least
        return repeat_to_precision(measure, lambda r: r.receiver_bps, least, max(least, most),
                                   float(self.param("precision")) / 100)

    def internode_rtt(self, peer: Peer, meta: dict[str, Any]) -> Sample:
        """The link's round trip as training's traffic takes it: TCP, echoed by the peer's
        test server (the path between two cities is TCP's; ICMP may be routed or queued
        otherwise). A peer without one (a worker from before it) is pinged instead, and
        the figure says which tool read it."""
        count, port = int(self.param("ping_count")), gate_port(peer.iperf3_port)
        try:
            rtts = echoed(peer.host, port, count)
        except ProbeError as exc:
            why = str(exc)  # kept with the figure: why it is ping's and not TCP's
            ping = self.ping(peer)
            if ping.rtt_avg_ms is None:
                raise ProbeError(f"no round trip to {peer.name} ({peer.host}): neither its test "
                                 f"server on port {port} nor ping answered") from None
            return Sample("network.internode_rtt", ping.rtt_avg_ms, "ms", n=ping.received,
                          min=ping.rtt_min_ms, max=ping.rtt_max_ms,
                          metadata=meta | self.ping_params() | {"echo_error": why[:300]})
        return summarise("network.internode_rtt", rtts,
                         meta | {"tool": "tcp echo", "echo_port": port, "count": count})

    def ping_params(self) -> dict[str, Any]:
        return {"tool": "ping", "count": int(self.param("ping_count")),
                "interval_s": self.param("ping_interval")}

    def iperf3_params(self, first: Iperf3Result) -> dict[str, Any]:
        return {"tool": "iperf3", "version": first.version, "streams": first.streams,
                "intervals_gbps": [round(b / GBIT, 4) for b in first.intervals_bps],
                "duration_s": int(self.param("iperf3_duration")),
                "omit_s": int(self.param("iperf3_omit"))}

    def ping(self, peer: Peer) -> PingResult:
        count = int(self.param("ping_count"))
        interval = self.param("ping_interval")
        argv = ["ping", "-n", "-c", str(count), "-i", f"{interval:g}", "-W", "2", "--", peer.host]
        result = runner.run(argv, timeout=count * interval + 10)
        return parse_ping(result.stdout)

    def tracepath(self, peer: Peer) -> TracepathResult:
        result = runner.run(["tracepath", "-n", "-m", "30", "--", peer.host], timeout=90)
        return parse_tracepath(result.stdout)

    def test_seconds(self) -> float:
        """How long one iperf3 test may hold a reference's turn: with its busy retries."""
        return turn_seconds({name: self.param(name) for name in ("iperf3_duration", "iperf3_omit")})

    def iperf3(self, peer: Peer, reverse: bool, streams: int = 1) -> Iperf3Result:
        duration = int(self.param("iperf3_duration"))
        omit = int(self.param("iperf3_omit"))
        argv = ["iperf3", "-J", "-c", peer.host, "-p", str(peer.iperf3_port),
                "-t", str(duration), "-O", str(omit), "--connect-timeout", "3000"]
        if reverse:
            argv.append("-R")
        if streams > 1:
            argv += ["-P", str(streams)]
        retries = Retries()
        with turn_credential(self.ctx.references.credential(peer.name)) as (auth, env):
            while True:
                result = runner.run(argv + auth, timeout=duration + omit + 20, env=env)
                try:
                    return parse_iperf3(result.stdout)
                except Iperf3Error as exc:
                    delay = retries.after(str(exc))
                    if delay is None:
                        raise ProbeError(peer_failure(peer, exc)) from None
                    time.sleep(delay)


class Retries:
    """When an iperf3 test a reference refused is tried again: soon after a refused
    credential (the agent has not written the turn yet), later and later while the server is
    busy or closed; None: give up."""

    def __init__(self) -> None:
        self.refused = 0
        self.busy = 0

    def after(self, error: str) -> float | None:
        if not any(reason in error for reason in RETRYABLE):
            return None
        if AUTH_REFUSED in error and self.refused < QUICK_AUTH_RETRIES:
            self.refused += 1
            return AUTH_RETRY_S
        if self.busy == BUSY_RETRIES - 1:
            return None
        self.busy += 1
        return 0.5 * self.busy


@contextlib.contextmanager
def turn_credential(credential: dict[str, str] | None
                    ) -> Iterator[tuple[list[str], dict[str, str] | None]]:
    """iperf3's arguments and environment for a turn's credential (none without one): the
    username, the server's public key in a file of its own, the password in IPERF3_PASSWORD
    (never on the command line, where other users' `ps` would read it)."""
    if not credential:
        yield [], None
        return
    with tempfile.TemporaryDirectory(prefix="bench-iperf3-") as directory:
        key = Path(directory) / "reference.pem"
        key.write_text(credential["public_key"])
        yield (["--username", credential["username"], "--rsa-public-key-path", str(key)],
               {**os.environ, "IPERF3_PASSWORD": credential["password"]})


def served_log(host: str, port: int) -> Path:
    """Where this node's iperf3 server logs the tests its peers send it (workers/host/node_app):
    the receiving end's own view of each link."""
    state = Path(os.environ.get("XDG_STATE_HOME") or Path.home() / ".local" / "state")
    return state / "bench" / f"iperf3-served-{host}-{port}.json"


def read_served(path: Path, offset: int) -> list[ServerReport]:
    """The server's reports appended since ``offset`` (the whole log if it was rotated)."""
    try:
        with path.open("rb") as log:
            if log.seek(0, 2) < offset:
                offset = 0
            log.seek(offset)
            text = log.read(MAX_SERVED_BYTES).decode("utf-8", "replace")
    except OSError:
        return []
    return [r for r in map(server_report, json_objects(text)[0]) if r is not None]


def await_served(path: Path, offset: int, senders: set[str],
                 timeout: float = SERVED_WAIT_S) -> list[ServerReport]:
    """The server's reports of this run's tests once every sender's are in the log, and the
    log has then been still for SERVED_QUIET_S. iperf3 writes a test's report after its
    client has the result: on a busy host that came after the round's barrier, and a whole
    round's records were missing (stop 41's CI, the links lab beside the parallel part)."""
    deadline = time.monotonic() + timeout
    size = -1
    while True:
        reports = read_served(path, offset)
        seen = {r.client.removeprefix("::ffff:") for r in reports if not r.reverse}
        now = path.stat().st_size if path.exists() else 0
        if (senders <= seen and now == size) or time.monotonic() >= deadline:
            return reports
        size = now
        time.sleep(SERVED_QUIET_S)


def served_samples(reports: list[ServerReport]) -> list[Sample]:
    """The receiver's count of each test its peers sent it, by the test's cookie."""
    tests = [r for r in reports if not r.reverse and r.received_bps > 0][:MAX_SERVED]
    if not tests:
        return []
    return [summarise("network.internode_received", [r.received_bps / GBIT for r in tests],
                      {"tool": "iperf3 server", "served": [
                          {"cookie": r.cookie, "gbps": round(r.received_bps / GBIT, 6)}
                          for r in tests]})]


def peer_failure(peer: Peer, exc: Exception) -> str:
    """The run's error for a failed test towards ``peer``.

    The job's owner reads it. Towards another node, the tool's own words (refused, no
    route, timed out) would tell a buyer about that node's network, and the address came
    from its provider: a fleet told to test a planted address would scan it. Only the
    reference endpoints, the platform's own, get the tool's message.
    """
    if peer.name.startswith(MESH_PREFIX):
        return (f"iperf3 to {peer.name} failed: its test server did not answer at its enrolled "
                "address (its provider can check the node's iperf3 server and firewall)")
    return f"iperf3 to {peer.name} ({peer.host}:{peer.iperf3_port}) failed: {exc}"


def ping_samples(result: PingResult, meta: dict[str, Any]) -> list[Sample]:
    """RTT figures from one ping run; loss is always reported, RTTs only if any reply came."""
    samples = [Sample("network.icmp_loss", result.loss_percent, "%", n=result.transmitted,
                      metadata=meta)]
    if result.received and result.rtt_avg_ms is not None:
        spread = summarise("network.icmp_rtt_avg", list(result.rtts_ms) or [result.rtt_avg_ms])
        samples.append(Sample("network.icmp_rtt_avg", result.rtt_avg_ms, "ms", n=result.received,
                              p5=spread.p5, p95=spread.p95, min=result.rtt_min_ms,
                              max=result.rtt_max_ms, cv=spread.cv, metadata=meta))
        for metric, value in (("network.icmp_rtt_min", result.rtt_min_ms),
                              ("network.icmp_rtt_max", result.rtt_max_ms),
                              ("network.icmp_rtt_mdev", result.rtt_mdev_ms)):
            if value is not None:
                samples.append(Sample(metric, value, "ms", n=result.received, metadata=meta))
    return samples


# A peer's test server that did not answer is asked again before the link's RTT falls back
# to ping: on a saturated host (CI's two cores under a three-node mesh) an echo missed its
# 5 s, three times in a row once, and the figure became ICMP's, which a path between cities
# does not delay. A refused connection (no server, or one a moment from listening) is asked
# ECHO_TRIES times; any other miss (a stall under load, BUSY) again until ECHO_PATIENCE_S.
ECHO_TRIES = 3
ECHO_PATIENCE_S = 30.0
ECHO_RETRY_S = 1.0


class EchoRefused(ProbeError):
    """Nothing listens on the peer's test-server port (a worker from before it)."""


def echoed(host: str, port: int, count: int) -> list[float]:
    """``tcp_echo_rtts`` to a peer's test server, asked again as above; the last miss
    raises."""
    started, tries = time.monotonic(), 0
    while True:
        tries += 1
        try:
            return tcp_echo_rtts(host, port, count, greeting=f"{ECHO} {count}")
        except EchoRefused:
            if tries >= ECHO_TRIES:
                raise
        except ProbeError:
            if time.monotonic() - started >= ECHO_PATIENCE_S:
                raise
        time.sleep(ECHO_RETRY_S)


def tcp_echo_rtts(host: str, port: int, count: int, timeout: float = 5.0,
                  token: str = "", greeting: str = "") -> list[float]:
    """Round-trip times (ms) over one TCP connection to an echo server.

    The TCP path's RTT where ICMP is blocked, or where only TCP sees the added latency
    (the lab's relays). With a run's ``token`` (a platform reference endpoint) the
    reference paces and times the round trips itself (answer_reference_rtts); without
    one, this host sends one byte at a time and times the echo. A ``greeting`` line opens
    the echo first and must be answered OK (a peer node's test server: contract.site_probe).
    """
    try:
        with socket.create_connection((host, port), timeout=timeout) as sock:
            sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
            if token:
                return answer_reference_rtts(sock, token, count)
            if greeting:
                sock.sendall(f"{greeting}\n".encode())
                answer = sock.makefile("rb").readline(MAX_ECHO_LINE).decode("ascii", "replace")
                if answer.strip() != "OK":
                    raise ProbeError(f"TCP echo on {host}:{port} refused: {answer.strip()[:80]!r}")
            rtts = []
            for _ in range(count + 1):
                start = time.perf_counter()
                sock.sendall(b"x")
                if sock.recv(1) != b"x":
                    raise ProbeError(f"TCP echo server {host}:{port} answered something else")
                rtts.append((time.perf_counter() - start) * 1000.0)
            return rtts[1:]  # the first round trip also pays for the server's accept
    except ConnectionRefusedError as exc:
        raise EchoRefused(f"TCP echo to {host}:{port} failed: {exc}") from None
    except OSError as exc:
        raise ProbeError(f"TCP echo to {host}:{port} failed: {exc}") from None


def answer_reference_rtts(sock: socket.socket, token: str, count: int) -> list[float]:
    """This host's side of a reference's RTT test: echo each nonce as it arrives.

    The reference sends unpredictable nonces one at a time and times each answer
    (workers/host/echo_server.py); the host cannot answer a nonce before it has it, so it
    can only make the figure worse. Its figures are what the reference timed, sent at the
    end (and stored by the platform from the reference's own record, not from here).
    """
    sock.sendall(f"{ECHO_TOKEN_PREFIX}{token} {count}\n".encode())
    reader = sock.makefile("rb")
    while True:
        line = reader.readline(MAX_ECHO_LINE)
        if not line:
            raise ProbeError("the reference's echo server closed before it sent its timings")
        if line.startswith(RTTS_PREFIX):
            try:
                return [float(r) for r in json.loads(line[len(RTTS_PREFIX):])]
            except (ValueError, TypeError):
                raise ProbeError("the reference's echo server sent unreadable timings") from None
        sock.sendall(line)


def route_samples(result: TracepathResult, meta: dict[str, Any]) -> list[Sample]:
    hops = [{"ttl": h.ttl, "host": h.host, "rtt_ms": h.rtt_ms, "no_reply": h.no_reply}
            for h in result.hops]
    return [Sample("network.hop_count", float(result.hop_count), "count", n=1,
                   metadata=meta | {"hops": hops, "pmtu": result.pmtu, "reached": result.reached})]


def cookies(results: list[Iperf3Result]) -> dict[str, Any]:
    """The tests' ids, by which the platform finds the reference's own record of each."""
    return {"cookies": [r.cookie for r in results if r.cookie]}


def losses(results: list[Iperf3Result]) -> dict[str, Any]:
    """What the sender retransmitted over what it sent (GB), when its OS counts it: a lossy
    path shows here before its throughput falls far (board/link_faults.py)."""
    counted = [r for r in results if r.retransmits is not None]
    if not counted:
        return {}
    sent_gb = sum(r.sender_bps * r.duration_s / 8 for r in counted) / 1e9
    return {"retransmits": sum(r.retransmits or 0 for r in counted),
            "sent_gb": round(sent_gb, 6)}


def iperf3_samples(forward: list[Iperf3Result], reverse: list[Iperf3Result],
                   meta: dict[str, Any]) -> list[Sample]:
    samples = [
        summarise("network.tcp_throughput", [r.receiver_bps / GBIT for r in forward],
                  meta | cookies(forward)),
        summarise("network.tcp_throughput_sent", [r.sender_bps / GBIT for r in forward], meta),
        summarise("network.tcp_throughput_reverse", [r.receiver_bps / GBIT for r in reverse],
                  meta | cookies(reverse)),
    ]
    retransmits = [float(r.retransmits) for r in forward if r.retransmits is not None]
    if retransmits:
        samples.append(summarise("network.tcp_retransmits", retransmits, meta))
    rtts = [r.mean_rtt_ms for r in forward if r.mean_rtt_ms is not None]
    if rtts:
        samples.append(summarise("network.tcp_rtt_loaded", rtts, meta))
    return samples
