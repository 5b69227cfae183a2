"""Tests for benchmarks.parsers.tracepath against recorded iputils tracepath output."""

import contextlib
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from benchmarks.parsers import ParseError
from benchmarks.parsers.tracepath import Hop, TracepathResult, parse_tracepath

DATA = Path(__file__).resolve().parent.parent / "data" / "tracepath"


def recorded(name: str) -> str:
    return (DATA / name).read_text(encoding="utf-8")


def test_it_reads_a_loopback_trace_as_one_reached_hop() -> None:
    result = parse_tracepath(recorded("loopback.txt"))

    assert result == TracepathResult(
        hops=(Hop(ttl=1, host="127.0.0.1", rtt_ms=0.084, no_reply=False),),
        hop_count=1,
        pmtu=65535,
        reached=True,
    )


def test_it_takes_pmtu_and_hop_count_from_the_resume_line() -> None:
    # "Resume: pmtu 1480 hops 7 back 8"
    result = parse_tracepath(recorded("handwritten_multihop_with_no_reply.txt"))

    assert result.pmtu == 1480
    assert result.hop_count == 7
    assert result.reached is True


def test_it_marks_no_reply_hops_without_host_or_time() -> None:
    result = parse_tracepath(recorded("handwritten_multihop_with_no_reply.txt"))

    assert [hop for hop in result.hops if hop.no_reply] == [
        Hop(ttl=3, host=None, rtt_ms=None, no_reply=True),
        Hop(ttl=5, host=None, rtt_ms=None, no_reply=True),
    ]


def test_it_keeps_every_answer_line_in_order_but_not_the_localhost_note() -> None:
    result = parse_tracepath(recorded("handwritten_multihop_with_no_reply.txt"))

    assert [(hop.ttl, hop.host, hop.rtt_ms) for hop in result.hops] == [
        (1, "192.168.1.1", 0.512),
        (1, "192.168.1.1", 0.437),
        (2, "10.20.0.1", 8.904),
        (3, None, None),
        (4, "198.51.100.17", 11.233),
        (5, None, None),
        (6, "203.0.113.9", 14.871),
        (6, "203.0.113.9", 15.002),
        (7, "192.0.2.44", 16.12),
    ]


def test_it_reads_the_recorded_ipv6_trace_with_its_localhost_pmtu_note() -> None:
    result = parse_tracepath(recorded("loopback_ipv6.txt"))

    assert result.hops == (
        Hop(ttl=1, host="::1", rtt_ms=0.051, no_reply=False),
        Hop(ttl=1, host="::1", rtt_ms=0.008, no_reply=False),
    )
    assert (result.hop_count, result.pmtu, result.reached) == (1, 65536, True)


def test_it_reports_a_trace_that_ran_out_of_hops_as_not_reached() -> None:
    # Recorded: every probe swallowed, "Too many hops", Resume without "hops".
    result = parse_tracepath(recorded("loopback_no_reply_max3.txt"))

    assert result == TracepathResult(
        hops=(
            Hop(ttl=1, host=None, rtt_ms=None, no_reply=True),
            Hop(ttl=2, host=None, rtt_ms=None, no_reply=True),
            Hop(ttl=3, host=None, rtt_ms=None, no_reply=True),
        ),
        hop_count=3,
        pmtu=65535,
        reached=False,
    )


def test_it_counts_a_direct_reply_from_the_target_as_reached() -> None:
    # Recorded: " 1?: reply received 8)" then a Resume line without "hops".
    result = parse_tracepath(recorded("loopback_reply_received.txt"))

    assert result == TracepathResult(
        hops=(Hop(ttl=1, host=None, rtt_ms=None, no_reply=False),),
        hop_count=1,
        pmtu=65535,
        reached=True,
    )


def test_it_reads_name_and_address_hosts_and_unreachable_verdicts() -> None:
    # `tracepath -b` prints "name (address)"; !H ends the run short of the target.
    text = (
        " 1:  gw.example (192.168.1.1)                             0.401ms \n"
        " 2:  edge.example (192.0.2.1)                             3.250ms !H\n"
        "     Resume: pmtu 1500 \n"
    )

    result = parse_tracepath(text)

    assert result.hops == (
        Hop(ttl=1, host="gw.example (192.168.1.1)", rtt_ms=0.401, no_reply=False),
        Hop(ttl=2, host="edge.example (192.0.2.1)", rtt_ms=3.25, no_reply=False),
    )
    assert (result.hop_count, result.pmtu, result.reached) == (2, 1500, False)


def test_it_falls_back_to_the_last_reported_pmtu_when_interrupted() -> None:
    # Ctrl-C before the end: no Resume line, so the last "pmtu N" seen counts.
    text = (
        " 1?: [LOCALHOST]                      pmtu 1500\n"
        " 1:  192.168.1.1                                           0.512ms \n"
        " 2:  no reply\n"
    )

    result = parse_tracepath(text)

    assert (result.hop_count, result.pmtu, result.reached) == (2, 1500, False)


@pytest.mark.parametrize(
    "text",
    [
        "",
        "tracepath: 127.0.0.1: Name or service not known\n",
        " 1:  192.168.1.1   0.5ms and then something else\n",
        "     Resume: pmtu 1500 \n     Resume: pmtu 1500 \n",
    ],
    ids=["empty", "error-message", "garbled-hop-line", "two-resume-lines"],
)
def test_it_rejects_text_that_is_not_tracepath_output(text: str) -> None:
    with pytest.raises(ParseError):
        parse_tracepath(text)


@given(st.text())
def test_arbitrary_text_raises_nothing_but_parse_error(text: str) -> None:
    with contextlib.suppress(ParseError):
        parse_tracepath(text)


hop_like_lines = st.builds(
    "{}{}{}".format,
    st.from_regex(r"\A *[0-9]{1,4}\??: +\Z"),
    st.sampled_from(["", "no reply", "[LOCALHOST] ", "192.0.2.1 ", "reply received 8)"]),
    st.text(),
)


@given(st.sampled_from(sorted(p.name for p in DATA.glob("*.txt"))), st.data())
def test_damaged_recordings_raise_nothing_but_parse_error(name: str, data: st.DataObject) -> None:
    # Swap one line of a recording for either noise or a line that starts
    # like a hop, so the per-line parsing sees near-misses, not just junk.
    lines = recorded(name).splitlines()
    index = data.draw(st.integers(0, len(lines) - 1))
    lines[index] = data.draw(st.text() | hop_like_lines)
    with contextlib.suppress(ParseError):
        parse_tracepath("\n".join(lines))
