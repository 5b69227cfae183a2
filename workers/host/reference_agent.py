"""The platform reference's agent (`benchctl reference-agent`): its servers' records, handed in.

A reference runs on its own host in its region, far from the web tier: an `iperf3 -s -J
--logfile` and a `benchctl echo-server --log`. The agent tails both logs and posts what they
gained to the platform (POST /api/v1/reference/records) with the reference's key, every
``interval`` seconds, or sooner when there is something new; an empty post still tells the
platform that nothing is missing up to its `through`, so results are judged without waiting.

Where it has read to is kept in a small state file and moved on only after the platform
stored the batch: a lost answer or a platform restart re-sends a batch, which the platform
stores once, and nothing written is ever skipped.

With a firewall (``--firewall-ports``, workers.host.reference_firewall) the same loop keeps
the servers' ports open to the enrolled nodes only, refreshing the list between posts; with
``--iperf3-auth`` (workers.host.iperf3_auth) it keeps the iperf3 server's users file at the
turns the platform has granted, so only the run holding the turn can start a test.
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import requests

from contract.iperf3_server import log_records, storable
from workers.host.iperf3_auth import Iperf3Turns
from workers.host.reference_firewall import Firewall

MAX_BATCH = 200  # records of each log per post (the platform takes at most 500 in all)
# What one read takes of a log at most: the agent's memory stays this size however far
# behind it is (a 600 s iperf3 test of 8 streams is under 1 MiB without its intervals,
# about 3 MiB with them).
READ_BYTES = 16 << 20
READ_FIRST = 256 << 10  # what a read takes first: a batch of echo records is ~30 KiB
# The per-second intervals of a test are for people reading the log; the platform reads
# the start and end sums, so the agent leaves them out (a 60 s test is 60 of them per stream).
DROPPED_IPERF3_FIELDS = ("intervals",)


@dataclass
class LogTail:
    """What a growing log gained since ``offset``: its complete JSON values."""

    path: Path
    offset: int = 0
    pending: list[Any] = field(default_factory=list)
    pending_end: int = 0  # the offset once ``pending`` is handed in
    complete: bool = True  # the last read reached the log's end
    skipped: int = 0  # characters passed over as not a record, since start
    read_bytes: int = READ_BYTES

    def read(self, limit: int) -> list[Any]:
        if self.pending:  # not handed in yet: the same records again
            return self.pending
        try:
            with self.path.open("rb") as log:
                size = log.seek(0, 2)
                if size < self.offset:  # rotated or truncated: start again
                    self.offset = 0
                # A batch of records is small: read a little, and more only while not one
                # whole value is in (up to read_bytes), not the whole rest of the log.
                want = min(READ_FIRST, self.read_bytes)
                while True:
                    log.seek(self.offset)
                    chunk = log.read(want)
                    # surrogateescape: a client's cookie is copied raw into the server's
                    # JSON; an invalid byte must not change the length re-encoded below.
                    text = chunk.decode("utf-8", "surrogateescape")
                    read = log_records(text, limit)
                    if read.objects or read.done or self.offset + len(chunk) >= size \
                            or want >= self.read_bytes:
                        break
                    want = min(want * 2, self.read_bytes)
        except OSError:
            return []  # not written yet
        done, at_end = read.done, self.offset + len(chunk) >= size
        if not read.objects and read.done == 0 and not at_end:
            done = len(text)  # one value larger than a read: no reference writes one
        self.skipped += read.skipped + (done - read.done)
        # A value still being written: the test it is of ended before this read.
        self.complete = at_end and len(read.objects) < limit and not text[done:].strip()
        self.pending = [storable(o) for o in read.objects]
        self.pending_end = self.offset + len(text[:done].encode("utf-8", "surrogateescape"))
        return self.pending

    def handed_in(self) -> None:
        self.offset, self.pending = self.pending_end, []


def trimmed(report: Any) -> Any:
    if isinstance(report, dict):
        return {k: v for k, v in report.items() if k not in DROPPED_IPERF3_FIELDS}
    return report


class ReferenceAgent:
    def __init__(self, api_url: str, key: str, iperf3_log: Path, echo_log: Path | None,
                 state: Path, interval: float = 0.5, timeout: float = 10) -> None:
        self.url = f"{api_url.rstrip('/')}/api/v1/reference/records"
        self.session = requests.Session()
        self.session.headers["Authorization"] = f"Reference {key}"
        self.state = state
        saved = self._load_state()
        self.iperf3 = LogTail(iperf3_log, saved.get("iperf3", 0))
        self.echo = LogTail(echo_log, saved.get("echo", 0)) if echo_log else None
        self.interval = interval
        self.timeout = timeout
        self.firewall: Firewall | None = None
        self.turns: Iperf3Turns | None = None

    def guard(self, api_url: str, ports: list[int], interval: float = 10.0) -> Firewall:
        """Keep ``ports`` open to the allow-list only: closed at once (raises where nft
        cannot be run), then refreshed by run()."""
        firewall = Firewall(self.session, api_url, ports, interval=interval, timeout=self.timeout)
        firewall.guard()
        self.firewall = firewall
        return firewall

    def authenticate(self, api_url: str, directory: Path, port: int = 5201) -> Iperf3Turns:
        """Let only the turns' holders test on the iperf3 server (on ``port``): its key pair
        in ``directory`` (made where missing), the public half handed to the platform
        (raises when it is refused), and the users file refreshed by run()."""
        turns = Iperf3Turns(self.session, api_url, directory, port=port, timeout=self.timeout)
        turns.publish()
        turns.refresh()
        self.turns = turns
        return turns

    def _load_state(self) -> dict[str, int]:
        try:
            data = json.loads(self.state.read_text())
            return {k: int(v) for k, v in data.items() if k in ("iperf3", "echo")}
        except (OSError, ValueError, TypeError, AttributeError):
            return {}

    def _save_state(self) -> None:
        offsets = {"iperf3": self.iperf3.offset} | (
            {"echo": self.echo.offset} if self.echo else {})
        tmp = self.state.with_suffix(".tmp")
        tmp.write_text(json.dumps(offsets))
        tmp.replace(self.state)

    def hand_in(self) -> dict[str, Any]:
        """One post of what the logs gained (at most MAX_BATCH records); raises on failure,
        keeping the records to send again."""
        through = time.time()  # read before the logs: all they held by now is in this batch
        iperf3 = [trimmed(r) for r in self.iperf3.read(MAX_BATCH)]
        echo = self.echo.read(MAX_BATCH) if self.echo else []
        full = not (self.iperf3.complete and (self.echo is None or self.echo.complete))
        # A batch that does not hold all the logs had claims no completeness.
        body = {"iperf3": iperf3, "echo": echo, "through": 0.0 if full else through}
        response = self.session.post(self.url, json=body, timeout=self.timeout)
        if response.status_code != 200:
            raise RuntimeError(f"HTTP {response.status_code}: {response.text[:300]}")
        self.iperf3.handed_in()
        if self.echo:
            self.echo.handed_in()
        self._save_state()
        stored: dict[str, Any] = response.json()
        skipped = self.iperf3.skipped + (self.echo.skipped if self.echo else 0)
        return stored | {"full": full, "skipped": skipped}

    def run(self, stop: Callable[[], bool] = lambda: False,
            report: Callable[[str], None] = print) -> None:
        delay, skipped = self.interval, 0
        while not stop():
            # Due every few seconds, between posts: a refresh is one small GET.
            line = self.firewall.refresh() if self.firewall else None
            if line:
                report(line)
            # Every pass: a turn granted now is tested on within a second.
            line = self.turns.refresh() if self.turns else None
            if line:
                report(line)
            try:
                stored = self.hand_in()
            except (requests.RequestException, RuntimeError, ValueError) as exc:
                report(f"reference agent: records not handed in, retrying: {exc}")
                delay = min(delay * 2, 30.0)
            else:
                if stored["stored"]:
                    report(f"reference agent: handed in {stored['stored']} record(s)")
                if stored["skipped"] > skipped:
                    report(f"reference agent: passed over {stored['skipped'] - skipped} "
                           "character(s) of the logs that were not a record")
                    skipped = stored["skipped"]
                delay = 0.0 if stored["full"] else self.interval
            # A platform that refuses posts (backing off up to 30 s) must not hold up the
            # firewall's refresh.
            _pause(min(delay, self.firewall.wait()) if self.firewall else delay, stop)


def _pause(seconds: float, stop: Callable[[], bool]) -> None:
    """Sleep in short slices, so that a stop asked for during a 30 s back-off is heard."""
    deadline = time.monotonic() + seconds
    while not stop() and (left := deadline - time.monotonic()) > 0:
        time.sleep(min(left, 0.5))
