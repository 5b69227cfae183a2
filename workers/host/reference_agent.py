"""The platform reference's agent (`benchctl reference-agent`): its servers' records, handed in.

A reference runs on its own host in its region, far from the web tier: an `iperf3 -s -J
--logfile` and a `benchctl echo-server --log`. The agent tails both logs and posts what they
gained to the platform (POST /api/v1/reference/records) with the reference's key, every
``interval`` seconds, or sooner when there is something new; an empty post still tells the
platform that nothing is missing up to its `through`, so results are judged without waiting.

Where it has read to is kept in a small state file and moved on only after the platform
stored the batch: a lost answer or a platform restart re-sends a batch, which the platform
stores once, and nothing written is ever skipped.
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import requests

from benchmarks.parsers.iperf3_server import json_objects

MAX_BATCH = 200  # records of each log per post (the platform takes at most 500 in all)
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

    def read(self, limit: int) -> list[Any]:
        if self.pending:  # not handed in yet: the same records again
            return self.pending
        try:
            with self.path.open("rb") as log:
                size = log.seek(0, 2)
                if size < self.offset:  # rotated or truncated: start again
                    self.offset = 0
                log.seek(self.offset)
                # surrogateescape: a client's cookie is copied raw into the server's JSON; an
                # invalid byte must not change the length re-encoded below.
                text = log.read().decode("utf-8", "surrogateescape")
        except OSError:
            return []  # not written yet
        # Only the first ``limit`` values: the offset then moves to the end of the last one.
        objects, done = json_objects(text, limit)
        # A value still being written: the test it is of ended before this read.
        self.complete = len(objects) < limit and not text[done:].strip()
        self.pending = objects
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
        return stored | {"full": full}

    def run(self, stop: Callable[[], bool] = lambda: False,
            report: Callable[[str], None] = print) -> None:
        delay = self.interval
        while not stop():
            try:
                stored = self.hand_in()
            except (requests.RequestException, RuntimeError, ValueError) as exc:
                report(f"reference agent: records not handed in, retrying: {exc}")
                delay = min(delay * 2, 30.0)
            else:
                if stored["stored"]:
                    report(f"reference agent: handed in {stored['stored']} record(s)")
                delay = 0.0 if stored["full"] else self.interval
            time.sleep(delay)
