"""Parse an iperf3 server's own log (`iperf3 -s -J --logfile FILE`; checked against 3.12).

The server appends one JSON report per test it served, not one per line. The fields used::

    start.cookie                         the test's id: the client's JSON carries it too
    start.connected[0].remote_host       the client's address
    start.timestamp.timesecs             when the test began (unix seconds)
    start.test_start.{reverse, num_streams, duration, omit}
    end.sum_received.bits_per_second     the server's count of a test towards it
    end.sum_sent.bits_per_second         ... of a reverse test (-R): it sent

It lives in contract because both sides read the same log: the reference agent ships its
records, the platform checks them against a run. In the server's log the other side's figure
is 0. Error reports (a client that went away) have no ``end`` sums and are skipped.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True)
class ServerReport:
    cookie: str
    client: str
    started: float  # unix seconds
    reverse: bool
    streams: int
    received_bps: float
    sent_bps: float
    duration: int = 0  # -t, seconds
    omit: int = 0  # -O, seconds

    @property
    def own_bps(self) -> float:
        """What the server itself counted: received, or sent in a reverse test."""
        return self.sent_bps if self.reverse else self.received_bps


def json_objects(text: str, limit: int | None = None, start: int = 0) -> tuple[list[Any], int]:
    """Every complete JSON value in ``text`` from ``start`` (the first ``limit``), and where
    the unread rest begins."""
    decoder = json.JSONDecoder()
    objects: list[Any] = []
    i = done = start
    while i < len(text) and (limit is None or len(objects) < limit):
        while i < len(text) and text[i].isspace():
            i += 1
        if i >= len(text):
            done = i
            break
        try:
            obj, i = decoder.raw_decode(text, i)
        except json.JSONDecodeError:
            break  # a report still being written: read it next time
        objects.append(obj)
        done = i
    return objects, done


# Where a record of a reference's log begins: iperf3 -J writes each report from a "{" at
# the start of a line and indents everything inside it; the echo server writes one record
# a line. Inside a JSON string a newline is always escaped, so no value holds this.
RECORD_START = "\n{"


@dataclass(frozen=True)
class LogRead:
    objects: list[Any]
    done: int  # where the unread rest begins (characters of ``text``)
    skipped: int  # characters skipped as not a record


def log_records(text: str, limit: int) -> LogRead:
    """The first ``limit`` complete JSON values of a reference's log, skipping what is not
    one: text that does not parse and has a record after it is passed over to that record,
    so one malformed report (a crafted cookie, a torn write) never stops the reading. Text
    that does not parse with nothing after it is a record still being written: it waits."""
    objects: list[Any] = []
    done = skipped = 0
    while len(objects) < limit:
        found, done = json_objects(text, limit - len(objects), done)
        objects += found
        if len(objects) >= limit or not text[done:].strip():
            break
        following = text.find(RECORD_START, done + 1)
        if following < 0:
            break
        skipped += following + 1 - done
        done = following + 1
    return LogRead(objects, done, skipped)


def storable(value: Any) -> Any:
    """``value`` with every string as UTF-8 and a database's text can hold: iperf3 copies a
    client's cookie raw into its log, so a log can hold any byte (here as surrogates, from
    a surrogateescape decode) and NULs, which PostgreSQL refuses in text and JSONB."""
    if isinstance(value, str):
        try:  # the raw bytes back, each invalid one then one U+FFFD
            raw = value.encode("utf-8", "surrogateescape")
        except UnicodeEncodeError:  # a surrogate from a JSON escape ("\\ud800")
            raw = value.encode("utf-8", "surrogatepass")
        return raw.decode("utf-8", "replace").replace("\x00", "")
    if isinstance(value, list):
        return [storable(v) for v in value]
    if isinstance(value, dict):
        return {storable(str(k)): storable(v) for k, v in value.items()}
    return value


def server_report(obj: Any) -> ServerReport | None:
    """One iperf3 server report; None for error reports and other shapes."""
    try:
        start, finish = obj["start"], obj["end"]
        return ServerReport(
            cookie=str(start["cookie"]),
            client=str(start["connected"][0]["remote_host"]),
            started=float(start["timestamp"]["timesecs"]),
            reverse=bool(start["test_start"].get("reverse")),
            streams=int(start["test_start"].get("num_streams", 1)),
            received_bps=float(finish.get("sum_received", {}).get("bits_per_second", 0.0)),
            sent_bps=float(finish.get("sum_sent", {}).get("bits_per_second", 0.0)),
            duration=int(start["test_start"].get("duration", 0)),
            omit=int(start["test_start"].get("omit", 0)))
    except (KeyError, IndexError, TypeError, ValueError, AttributeError):
        return None
