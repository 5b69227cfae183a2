"""Tests for benchmarks.parsers.ping against output recorded from iputils ping."""

import contextlib
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from benchmarks.parsers import ParseError
from benchmarks.parsers.ping import PingResult, parse_ping

DATA = Path(__file__).resolve().parent.parent / "data" / "ping"


def recorded(name: str) -> str:
    return (DATA / name).read_text(encoding="utf-8")


def test_it_counts_transmitted_and_received_packets() -> None:
    result = parse_ping(recorded("loopback_5_packets.txt"))

    assert result.transmitted == 5
    assert result.received == 5
    assert result.loss_percent == 0.0


def test_it_reads_the_summary_line() -> None:
    # "rtt min/avg/max/mdev = 0.042/0.045/0.057/0.005 ms"
    result = parse_ping(recorded("loopback_5_packets.txt"))

    assert result.rtt_min_ms == 0.042
    assert result.rtt_avg_ms == 0.045
    assert result.rtt_max_ms == 0.057
    assert result.rtt_mdev_ms == 0.005


def test_it_keeps_every_reply_time_in_order() -> None:
    result = parse_ping(recorded("loopback_5_packets.txt"))

    assert result.rtts_ms == (0.043, 0.057, 0.042, 0.042, 0.043)


def test_it_reads_ipv6_output_the_same_way() -> None:
    result = parse_ping(recorded("loopback_ipv6_3_packets.txt"))

    assert result == PingResult(
        transmitted=3,
        received=3,
        loss_percent=0.0,
        rtt_min_ms=0.027,
        rtt_avg_ms=0.034,
        rtt_max_ms=0.039,
        rtt_mdev_ms=0.005,
        rtts_ms=(0.027, 0.039, 0.037),
    )


def test_it_reports_total_loss_with_no_round_trip_times() -> None:
    result = parse_ping(recorded("loopback_100_percent_loss.txt"))

    assert result == PingResult(
        transmitted=3,
        received=0,
        loss_percent=100.0,
        rtt_min_ms=None,
        rtt_avg_ms=None,
        rtt_max_ms=None,
        rtt_mdev_ms=None,
        rtts_ms=(),
    )


def test_it_reads_fractional_loss_and_extra_counters() -> None:
    # iputils prints the loss with %g and adds +N fields when they are non-zero.
    text = (
        "--- 10.0.0.1 ping statistics ---\n"
        "3 packets transmitted, 2 received, +1 duplicates, +1 errors, "
        "33.3333% packet loss, time 2003ms\n"
        "rtt min/avg/max/mdev = 0.040/0.050/0.060/0.010 ms, pipe 2\n"
    )

    result = parse_ping(text)

    assert (result.transmitted, result.received) == (3, 2)
    assert result.loss_percent == 33.3333
    assert result.rtt_avg_ms == 0.050


def test_it_reads_whole_millisecond_reply_times() -> None:
    # At 100 ms and above iputils drops the decimals: "time=123 ms".
    text = (
        "64 bytes from 192.0.2.1: icmp_seq=1 ttl=50 time=123 ms\n"
        "64 bytes from 192.0.2.1: icmp_seq=2 ttl=50 time=12.5 ms (DUP!)\n"
        "--- 192.0.2.1 ping statistics ---\n"
        "1 packets transmitted, 1 received, +1 duplicates, 0% packet loss, time 0ms\n"
        "rtt min/avg/max/mdev = 12.500/67.750/123.000/55.250 ms\n"
    )

    assert parse_ping(text).rtts_ms == (123.0, 12.5)


def test_it_rejects_network_unreachable_output() -> None:
    # Recorded: ping exits 2 with only "ping: connect: Network is unreachable".
    with pytest.raises(ParseError):
        parse_ping(recorded("network_unreachable.txt"))


@pytest.mark.parametrize(
    "text",
    [
        "",
        "hello world",
        "PING 127.0.0.1 (127.0.0.1) 56(84) bytes of data.\n",
        "5 packets transmitted, 5 received, time 4ms\n",
        "٣ packets transmitted, ٣ received, 0% packet loss\n",
    ],
    ids=["empty", "prose", "header-only", "no-loss-field", "non-ascii-digits"],
)
def test_it_rejects_text_that_is_not_ping_output(text: str) -> None:
    with pytest.raises(ParseError):
        parse_ping(text)


def test_it_rejects_two_runs_pasted_together() -> None:
    text = recorded("loopback_5_packets.txt")

    with pytest.raises(ParseError):
        parse_ping(text + text)


def test_it_rejects_counts_too_long_to_be_numbers() -> None:
    text = "9" * 5000 + " packets transmitted, 0 received, 100% packet loss\n"

    with pytest.raises(ParseError):
        parse_ping(text)


def test_the_error_is_a_value_error_so_generic_handlers_still_work() -> None:
    with pytest.raises(ValueError, match="not ping output"):
        parse_ping("not ping")


@given(st.text())
def test_arbitrary_text_raises_nothing_but_parse_error(text: str) -> None:
    with contextlib.suppress(ParseError):
        parse_ping(text)


@given(
    st.sampled_from(sorted(p.name for p in DATA.glob("*.txt"))),
    st.data(),
)
def test_damaged_recordings_raise_nothing_but_parse_error(name: str, data: st.DataObject) -> None:
    # Cut a recording at two random points and splice arbitrary text in
    # between: closer to real truncated/garbled output than pure noise.
    text = recorded(name)
    start = data.draw(st.integers(0, len(text)))
    stop = data.draw(st.integers(start, len(text)))
    damaged = text[:start] + data.draw(st.text()) + text[stop:]
    with contextlib.suppress(ParseError):
        parse_ping(damaged)
