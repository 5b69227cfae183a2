"""Parse an iperf3 server's own log (`iperf3 -s -J --logfile FILE`; checked against 3.12).

The server appends one JSON report per test it served, not one per line. The fields used::

    start.cookie                         the test's id: the client's JSON carries it too
    start.connected[0].remote_host       the client's address
    start.timestamp.timesecs             when the test began (unix seconds)
    start.test_start.{reverse, num_streams, duration, omit}
    end.sum_received.bits_per_second     the server's count of a test towards it
    end.sum_sent.bits_per_second         ... of a reverse test (-R): it sent

In the server's log the other side's figure is 0. Error reports (a client that went
away) have no ``end`` sums and are skipped.
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


def json_objects(text: str, limit: int | None = None) -> tuple[list[Any], int]:
    """Every complete JSON value in ``text`` (the first ``limit``), and where the unread
    rest begins."""
    decoder = json.JSONDecoder()
    objects: list[Any] = []
    i = done = 0
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
