"""What a reference endpoint measured itself: its iperf3 server's JSON log.

`iperf3 -s -J --logfile FILE` appends one JSON report per test. For a test a node ran
towards it, the server's `end.sum_received` is the throughput the reference counted, not
the host; certification checks the host's figure against it.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path


@dataclass(frozen=True)
class ServerReport:
    client: str
    started: float  # unix seconds
    reverse: bool
    received_bps: float
    sent_bps: float


def parse_log(text: str) -> list[ServerReport]:
    """Every complete report in the log; fragments and error reports are skipped."""
    decoder = json.JSONDecoder()
    reports = []
    i = 0
    while i < len(text):
        while i < len(text) and text[i].isspace():
            i += 1
        if i >= len(text):
            break
        try:
            obj, end = decoder.raw_decode(text, i)
        except json.JSONDecodeError:
            break  # a report still being written
        i = end
        try:
            start, finish = obj["start"], obj["end"]
            reports.append(ServerReport(
                client=str(start["connected"][0]["remote_host"]),
                started=float(start["timestamp"]["timesecs"]),
                reverse=bool(start["test_start"].get("reverse")),
                received_bps=float(finish.get("sum_received", {}).get("bits_per_second", 0.0)),
                sent_bps=float(finish.get("sum_sent", {}).get("bits_per_second", 0.0))))
        except (KeyError, IndexError, TypeError, ValueError, AttributeError):
            continue
    return reports


def received_gbps(path: str, client: str, since: float, until: float) -> list[float] | None:
    """Forward tests from ``client`` in the window, as the reference counted them; None
    when the log cannot be read."""
    try:
        text = Path(path).read_text()
    except OSError:
        return None
    return [r.received_bps / 1e9 for r in parse_log(text)
            if r.client == client and not r.reverse and since <= r.started <= until
            and r.received_bps > 0]
