"""Tests for benchmarks.parsers.iperf3 against recorded `iperf3 -J` client output."""

import contextlib
import copy
import json
from collections.abc import Iterator
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from benchmarks.parsers import ParseError
from benchmarks.parsers.iperf3 import Iperf3Error, parse_iperf3

DATA = Path(__file__).resolve().parent.parent / "data" / "iperf3"
SUCCESSFUL_RUNS = ["loopback_1_stream.json", "loopback_4_streams.json", "loopback_reverse.json"]

Json = None | bool | int | float | str | list["Json"] | dict[str, "Json"]


def recorded(name: str) -> str:
    return (DATA / name).read_text(encoding="utf-8")


def recorded_document(name: str) -> dict[str, Json]:
    document = json.loads(recorded(name))
    assert isinstance(document, dict)
    return document


def test_it_reads_sender_and_receiver_rates_from_the_end_sums() -> None:
    result = parse_iperf3(recorded("loopback_1_stream.json"))

    assert result.sender_bps == 36880562832.72205
    assert result.receiver_bps == 36880028117.23045


def test_it_reads_the_run_description_from_the_start_section() -> None:
    result = parse_iperf3(recorded("loopback_1_stream.json"))

    assert result.version == "iperf 3.12"
    assert result.streams == 1
    assert result.reverse is False


def test_it_reads_retransmits_and_measured_duration() -> None:
    result = parse_iperf3(recorded("loopback_1_stream.json"))

    assert result.retransmits == 0
    assert result.duration_s == 2.000168


def test_it_converts_mean_rtt_from_microseconds_to_milliseconds() -> None:
    # end.streams[0].sender.mean_rtt is 29 (microseconds).
    result = parse_iperf3(recorded("loopback_1_stream.json"))

    assert result.mean_rtt_ms == pytest.approx(0.029)


def test_it_lists_the_per_interval_sums_in_order() -> None:
    result = parse_iperf3(recorded("loopback_1_stream.json"))

    assert result.intervals_bps == (36362981458.44502, 37398105056.01663)


def test_it_averages_mean_rtt_over_parallel_streams() -> None:
    # The four streams report mean_rtt 61, 54, 57 and 54 microseconds.
    result = parse_iperf3(recorded("loopback_4_streams.json"))

    assert result.streams == 4
    assert result.mean_rtt_ms == pytest.approx((61 + 54 + 57 + 54) / 4 / 1000)
    assert result.sender_bps == 38930837224.50645
    assert result.receiver_bps == 38929708647.800316
    assert result.retransmits == 1


def test_it_flags_reverse_runs_and_leaves_their_rtt_unknown() -> None:
    # With -R the server sends; iperf3 writes mean_rtt 0 as a placeholder.
    result = parse_iperf3(recorded("loopback_reverse.json"))

    assert result.reverse is True
    assert result.mean_rtt_ms is None
    assert result.sender_bps == 35236420131.846725
    assert result.receiver_bps == 35236273175.35602
    assert result.retransmits == 2
    assert result.intervals_bps == (33299227104.70222, 37173296542.57985)


def test_it_leaves_retransmits_and_rtt_unknown_when_iperf3_omits_them() -> None:
    # UDP runs and non-Linux senders have neither field.
    document = json.loads(recorded("loopback_1_stream.json"))
    del document["end"]["sum_sent"]["retransmits"]
    for stream in document["end"]["streams"]:
        del stream["sender"]["mean_rtt"]

    result = parse_iperf3(json.dumps(document))

    assert result.retransmits is None
    assert result.mean_rtt_ms is None


def test_it_raises_iperf3_error_with_the_message_on_connection_refused() -> None:
    with pytest.raises(Iperf3Error) as caught:
        parse_iperf3(recorded("connection_refused.json"))

    assert caught.value.message == "unable to connect to server: Connection refused"
    assert str(caught.value) == "unable to connect to server: Connection refused"


def test_an_iperf3_error_is_also_a_parse_error() -> None:
    with pytest.raises(ParseError):
        parse_iperf3(recorded("connection_refused.json"))


def test_a_reported_error_wins_even_when_results_are_present() -> None:
    # iperf3 can fail mid-test and still print partial results.
    document = recorded_document("loopback_1_stream.json")
    document["error"] = "control socket has closed unexpectedly"

    with pytest.raises(Iperf3Error, match="control socket"):
        parse_iperf3(json.dumps(document))


@pytest.mark.parametrize(
    "text",
    [
        "",
        "iperf3: error - unable to connect to server",
        "[1, 2, 3]",
        '"just a string"',
        "{}",
        '{"start": {}, "end": {}, "intervals": []}',
        "[" * 100_000,
        '{"n": ' + "9" * 5000 + "}",
    ],
    ids=[
        "empty",
        "plain-text-error",
        "array",
        "string",
        "empty-object",
        "empty-sections",
        "deeply-nested",
        "huge-integer",
    ],
)
def test_it_rejects_input_that_is_not_iperf3_json(text: str) -> None:
    with pytest.raises(ParseError):
        parse_iperf3(text)


@pytest.mark.parametrize(
    ("path", "bad_value"),
    [
        (("end", "sum_sent", "bits_per_second"), "fast"),
        (("end", "sum_sent", "bits_per_second"), True),
        (("end", "sum_sent", "bits_per_second"), float("nan")),
        (("end", "sum_received", "bits_per_second"), 1e400),
        (("end", "sum_sent", "retransmits"), 1.5),
        (("start", "test_start", "reverse"), 2),
        (("start", "test_start", "num_streams"), -1),
        (("start", "version"), 3.12),
        (("intervals",), {}),
    ],
)
def test_it_rejects_fields_of_the_wrong_type(path: tuple[str, ...], bad_value: Json) -> None:
    document = recorded_document("loopback_1_stream.json")
    parent: Json = document
    for key in path[:-1]:
        assert isinstance(parent, dict)
        parent = parent[key]
    assert isinstance(parent, dict)
    parent[path[-1]] = bad_value

    with pytest.raises(ParseError):
        parse_iperf3(json.dumps(document))


def test_it_rejects_a_missing_end_section() -> None:
    document = recorded_document("loopback_1_stream.json")
    del document["end"]

    with pytest.raises(ParseError, match="end"):
        parse_iperf3(json.dumps(document))


json_values: st.SearchStrategy[Json] = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats() | st.text(),
    lambda children: st.lists(children) | st.dictionaries(st.text(), children),
    max_leaves=30,
)


def paths(value: Json, prefix: tuple[str | int, ...] = ()) -> Iterator[tuple[str | int, ...]]:
    """Every path to a value inside a JSON document, the root included."""
    yield prefix
    if isinstance(value, dict):
        for key, child in value.items():
            yield from paths(child, (*prefix, key))
    elif isinstance(value, list):
        for index, child in enumerate(value):
            yield from paths(child, (*prefix, index))


def replaced(document: Json, path: tuple[str | int, ...], new: Json) -> Json:
    if not path:
        return new
    result = copy.deepcopy(document)
    parent = result
    for step in path[:-1]:
        parent = parent[step]  # type: ignore[index]
    parent[path[-1]] = new  # type: ignore[index]
    return result


@given(st.text())
def test_arbitrary_text_raises_nothing_but_parse_error(text: str) -> None:
    with contextlib.suppress(ParseError):
        parse_iperf3(text)


@given(json_values)
def test_arbitrary_json_raises_nothing_but_parse_error(value: Json) -> None:
    with contextlib.suppress(ParseError):
        parse_iperf3(json.dumps(value))


@given(st.sampled_from(SUCCESSFUL_RUNS), st.data())
def test_a_recording_with_any_one_value_replaced_raises_nothing_but_parse_error(
    name: str, data: st.DataObject
) -> None:
    # Random JSON rarely gets past the first missing key; swapping one value
    # inside a real document exercises every field check instead.
    document = recorded_document(name)
    path = data.draw(st.sampled_from(list(paths(document))))
    with contextlib.suppress(ParseError):
        parse_iperf3(json.dumps(replaced(document, path, data.draw(json_values))))
