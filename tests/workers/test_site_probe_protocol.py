"""The site probe's protocol and timing, as pure functions (contract/site_probe.py)."""

from __future__ import annotations

import pytest

from contract import site_probe as sp


def test_the_buyer_times_from_its_answer_to_the_next_nonce() -> None:
    # answered at 1.0, 2.0; nonces arrived at 0.5, 1.010, 2.020 (perf_counter seconds)
    assert sp.buyer_round_trips([1.0, 2.0], [0.5, 1.010, 2.020]) == [10.0, 20.0]


def test_the_first_nonce_is_no_round_trip_and_a_missing_answer_ends_the_timing() -> None:
    assert sp.buyer_round_trips([], [0.5]) == []
    assert sp.buyer_round_trips([1.0, 2.0, 3.0], [0.5, 1.5]) == [500.0]


def test_a_nonce_line_carries_the_buyer_s_last_challenge() -> None:
    nonce, challenge = sp.fresh(), sp.fresh()
    parsed = sp.parse_nonce_line(sp.nonce_line(nonce, challenge))
    assert (parsed.nonce, parsed.challenge) == (nonce, challenge)
    assert sp.parse_nonce_line(sp.nonce_line(nonce, sp.NO_CHALLENGE)).challenge == "-"
    assert sp.parse_answer_line(sp.answer_line(nonce, challenge)) == (nonce, challenge)


@pytest.mark.parametrize("line", ["N zz 00", "N 0123 -", "PROBE x 3", "", "N " + "a" * 16])
def test_a_malformed_line_is_refused(line: str) -> None:
    with pytest.raises(sp.ProtocolError):
        sp.parse_nonce_line(line)


def test_the_limits_hold_whatever_a_client_asks() -> None:
    assert sp.bounded_count(10**9) == sp.BOUNDS["max_round_trips"]
    assert sp.bounded_count(-5) == 1
    assert sp.bounded_seconds(3600) == sp.BOUNDS["max_iperf3_seconds"]
    assert sp.gate_port(5201) == 5202 and sp.probe_iperf3_port(5201) == 5203


def test_a_one_off_server_that_refused_a_client_first_still_names_the_test_it_served() -> None:
    # Recorded from iperf3 3.12: `iperf3 -s -1 -J` with RSA authentication, a client without
    # the password (refused: an error report), then the buyer's test (its report).
    from pathlib import Path

    from workers.host.probe_gate import served

    recorded = (Path(__file__).resolve().parents[1] / "data" / "iperf3"
                / "one_off_server_refused_then_served.json").read_text()
    report = served(recorded)
    assert report is not None and report.received_bps > 1e8 and len(report.cookie) == 36
    assert served(recorded[:recorded.index("\n{", 1)]) is None  # the refusal alone
    assert served("") is None
