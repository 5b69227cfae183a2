"""Reading a reference endpoint's own iperf3 log (recorded from iperf3 3.12's server) and
its echo server's record: by test cookie or run token, each byte read once."""

from __future__ import annotations

import json
from pathlib import Path

from jobs.services.reference_records import ECHO, IPERF3, LogIndex, echo_record, server_report

DATA = Path(__file__).resolve().parents[1] / "data" / "iperf3"
FORWARD, REVERSE = "45cd7mxvirr4mzqbuyw4u6m3ss5j6ur5zu2p", "44e3fmdc3k67jkdk7bfd4hl7zkytsf67x7qm"


def test_the_servers_own_count_is_received_forward_and_sent_in_reverse() -> None:
    forward = server_report(json.loads((DATA / "server_log_forward.json").read_text()))
    reverse = server_report(json.loads((DATA / "server_log_reverse.json").read_text()))
    assert forward is not None and reverse is not None
    assert (forward.cookie, forward.reverse, forward.streams) == (FORWARD, False, 1)
    assert forward.sent_bps == 0 and forward.own_bps == forward.received_bps > 1e9
    assert reverse.cookie == REVERSE and reverse.reverse
    assert reverse.received_bps == 0 and reverse.own_bps == reverse.sent_bps > 1e9


def test_a_growing_log_is_found_by_cookie_and_a_report_still_being_written_waits(
        tmp_path: Path) -> None:
    log = tmp_path / "iperf3.json"
    forward, reverse = ((DATA / f"server_log_{k}.json").read_text() for k in ("forward", "reverse"))
    log.write_text(forward + reverse[: len(reverse) // 2])  # the second report is half-written
    index = LogIndex(server_report, "cookie")
    assert [r.cookie for r in index.lookup(str(log), FORWARD) or []] == [FORWARD]
    assert index.lookup(str(log), REVERSE) == []
    log.write_text(forward + reverse)
    assert [r.reverse for r in index.lookup(str(log), REVERSE) or []] == [True]
    assert index.lookup(str(tmp_path / "missing.json"), FORWARD) is None  # unreadable
    assert IPERF3 is not ECHO


def test_an_echo_record_needs_its_token_and_keeps_the_round_trips(tmp_path: Path) -> None:
    log = tmp_path / "echo.jsonl"
    log.write_text(json.dumps({"token": "t1", "client": "10.0.0.5", "started": 1.0,
                               "round_trips": 3, "rtts_ms": [1.0, 1.2, 1.1],
                               "median_ms": 1.1}) + "\n" + '{"round_trips": 1}\n')
    records = LogIndex(echo_record, "token").lookup(str(log), "t1") or []
    assert [(r.round_trips, r.rtts_ms, r.median_ms) for r in records] == [(3, (1.0, 1.2, 1.1), 1.1)]
