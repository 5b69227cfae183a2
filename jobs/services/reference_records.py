"""What a platform reference endpoint recorded itself, read from its own logs.

- Its iperf3 server (`iperf3 -s -J --logfile FILE`) appends one JSON report per test. The
  report's `start.cookie` is the test's id, which the client's JSON carries too; its
  `end.sum_received` (a test towards the reference) or `end.sum_sent` (a reverse test,
  `-R`) is the server's own count: in the server's log the other side's figures are 0.
- Its echo server (`benchctl echo-server --log FILE`) appends one JSON line per connection
  that began with a run's token: the round trips it timed itself.

Pure parsing, plus a small cache that reads only what a log gained since the last look
(the logs only grow, and the web process reads them on every network result).
"""

from __future__ import annotations

import threading
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from benchmarks.parsers.iperf3_server import json_objects, server_report


@dataclass(frozen=True)
class EchoRecord:
    token: str
    client: str
    started: float
    round_trips: int
    median_ms: float | None
    rtts_ms: tuple[float, ...] = ()


def echo_record(obj: Any) -> EchoRecord | None:
    try:
        median = obj.get("median_ms")
        return EchoRecord(token=str(obj["token"]), client=str(obj.get("client", "")),
                          started=float(obj["started"]), round_trips=int(obj["round_trips"]),
                          median_ms=float(median) if median is not None else None,
                          rtts_ms=tuple(float(r) for r in obj.get("rtts_ms") or ()))
    except (KeyError, TypeError, ValueError, AttributeError):
        return None


@dataclass
class _Tail:
    offset: int = 0
    by_key: dict[str, list[Any]] = field(default_factory=dict)


class LogIndex:
    """Records of a growing log by key (cookie or token), reading each byte once."""

    def __init__(self, parse: Any, key: str) -> None:
        self._parse = parse
        self._key = key
        self._tails: dict[str, _Tail] = {}
        self._lock = threading.Lock()

    def lookup(self, path: str, key: str) -> list[Any] | None:
        """The records with this key; None when the log cannot be read."""
        with self._lock:
            tail = self._tails.setdefault(path, _Tail())
            try:
                with Path(path).open("rb") as log:
                    size = log.seek(0, 2)
                    if size < tail.offset:  # rotated or truncated: start again
                        tail.offset, tail.by_key = 0, {}
                    log.seek(tail.offset)
                    text = log.read().decode("utf-8", "replace")
            except OSError:
                return None
            objects, done = json_objects(text)
            tail.offset += len(text[:done].encode("utf-8", "replace"))
            for obj in objects:
                record = self._parse(obj)
                if record is not None:
                    tail.by_key.setdefault(getattr(record, self._key), []).append(record)
            return list(tail.by_key.get(key, []))


IPERF3 = LogIndex(server_report, "cookie")
ECHO = LogIndex(echo_record, "token")
