"""Tests for benchmarks.parsers.fio against recorded `fio --output-format=json` output."""

import contextlib
import copy
import json
from collections.abc import Iterator
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from benchmarks.parsers import ParseError
from benchmarks.parsers.fio import FioError, parse_fio

DATA = Path(__file__).resolve().parent.parent / "data" / "fio"
SUCCESSFUL_RUNS = ["randread_4k_32jobs.json", "randread_4k_tmpfs.json", "seqread_1m.json",
                   "seqwrite_1m.json", "randread_2jobs_separate.json"]

Json = None | bool | int | float | str | list["Json"] | dict[str, "Json"]


def recorded(name: str) -> str:
    return (DATA / name).read_text(encoding="utf-8")


def recorded_document(name: str) -> dict[str, Json]:
    document = json.loads(recorded(name))
    assert isinstance(document, dict)
    return document


def test_it_reads_random_read_iops_bandwidth_and_latency_of_a_group() -> None:
    result = parse_fio(recorded("randread_4k_32jobs.json"))

    assert result.read_iops == 87857.426726
    assert result.read_bw_bytes == 359864019
    assert result.write_iops == 0
    assert result.write_bw_bytes == 0
    assert result.read_clat_p50_ns == 346112
    assert result.read_clat_p99_ns == 929792
    assert result.read_clat_p999_ns == 2023424


def test_it_reads_the_version_and_counts_the_jobs_of_a_group() -> None:
    # --group_reporting gives one entry for all 32 jobs; numjobs says how many.
    result = parse_fio(recorded("randread_4k_32jobs.json"))

    assert result.fio_version == "fio-3.33"
    assert result.jobs == 32


def test_it_reads_sequential_read_bandwidth() -> None:
    result = parse_fio(recorded("seqread_1m.json"))

    assert result.read_bw_bytes == 1076335504
    assert result.read_iops == 1026.473526
    assert result.jobs == 4


def test_a_write_only_run_has_write_figures_and_no_read_latency() -> None:
    # fio leaves "percentile" out of clat_ns when no read completed.
    result = parse_fio(recorded("seqwrite_1m.json"))

    assert result.write_bw_bytes == 2278013064
    assert result.write_iops == 2172.482552
    assert result.read_iops == 0
    assert result.read_clat_p50_ns is None
    assert result.read_clat_p99_ns is None
    assert result.read_clat_p999_ns is None


def test_it_reads_a_tmpfs_run_with_sub_microsecond_latency() -> None:
    result = parse_fio(recorded("randread_4k_tmpfs.json"))

    assert result.read_iops == 1441932.634731
    assert result.read_clat_p50_ns == 692
    assert result.read_clat_p999_ns == 10432


def test_without_group_reporting_it_sums_rates_and_takes_the_worst_percentile() -> None:
    # Two entries: 18566.433566 and 19693.306693 IOPS; p99 142336 and 127488 ns.
    result = parse_fio(recorded("randread_2jobs_separate.json"))

    assert result.read_iops == pytest.approx(18566.433566 + 19693.306693)
    assert result.read_bw_bytes == 76048111 + 80663784
    assert result.read_clat_p50_ns == 40704
    assert result.read_clat_p99_ns == 142336
    assert result.read_clat_p999_ns == 3096576
    # Both entries say numjobs=2; they are the same job section, counted once.
    assert result.jobs == 2


def test_a_missing_directory_is_a_fio_error_naming_the_failed_call() -> None:
    # fio prints no JSON at all, only an error line on stdout.
    with pytest.raises(FioError) as caught:
        parse_fio(recorded("missing_directory.txt"))

    assert "No such file or directory" in caught.value.message
    assert "func=lstat" in caught.value.message
    assert caught.value.errnos == ()


def test_the_missing_directory_stderr_is_a_fio_error_too() -> None:
    with pytest.raises(FioError, match="is not a directory"):
        parse_fio(recorded("missing_directory_stderr.txt"))


def test_a_job_that_failed_mid_run_is_a_fio_error_with_its_errno() -> None:
    # Writing to /dev/full: the JSON has "error": 28 and stdout starts with a
    # "fio: pid=..., err=28" line before the document.
    with pytest.raises(FioError) as caught:
        parse_fio(recorded("dev_full_enospc.json"))

    assert caught.value.errnos == (28,)
    assert "job 'full' failed with errno 28 (No space left on device)" in caught.value.message
    assert "func=io_u error" in caught.value.message


def test_a_fio_error_is_also_a_parse_error() -> None:
    with pytest.raises(ParseError):
        parse_fio(recorded("dev_full_enospc.json"))


def test_a_job_error_wins_even_when_results_are_present() -> None:
    document = recorded_document("randread_4k_32jobs.json")
    jobs = document["jobs"]
    assert isinstance(jobs, list) and isinstance(jobs[0], dict)
    jobs[0]["error"] = 22

    with pytest.raises(FioError, match="Invalid argument") as caught:
        parse_fio(json.dumps(document))

    assert caught.value.errnos == (22,)


def test_it_skips_warning_lines_before_the_json_document() -> None:
    text = "fio: some warning fio printed first\n" + recorded("seqread_1m.json")

    assert parse_fio(text).read_bw_bytes == 1076335504


@pytest.mark.parametrize(
    "text",
    [
        "",
        "random words, not from fio",
        "[1, 2, 3]",
        '"just a string"',
        "{}",
        '{"fio version": "fio-3.33", "jobs": []}',
        '{"jobs": []}',
        "[" * 100_000,
        "{" * 100_000,
        '{"n": ' + "9" * 5000 + "}",
    ],
    ids=["empty", "plain-text", "array", "string", "empty-object", "no-jobs", "no-version",
         "deeply-nested-array", "deeply-nested-object", "huge-integer"],
)
def test_it_rejects_input_that_is_not_fio_json(text: str) -> None:
    with pytest.raises(ParseError) as caught:
        parse_fio(text)

    # Only fio's own "fio: ..." lines or job errors make a FioError.
    assert not isinstance(caught.value, FioError)


@pytest.mark.parametrize(
    ("path", "bad_value"),
    [
        (("jobs", 0, "read", "iops"), "fast"),
        (("jobs", 0, "read", "iops"), True),
        (("jobs", 0, "read", "bw_bytes"), float("nan")),
        (("jobs", 0, "read", "bw_bytes"), -1),
        (("jobs", 0, "write", "iops"), 1e400),
        (("jobs", 0, "read", "clat_ns", "percentile", "99.000000"), None),
        (("jobs", 0, "error"), "EIO"),
        (("jobs", 0, "job options", "numjobs"), 32),
        (("jobs", 0, "job options", "numjobs"), "lots"),
        (("fio version",), 3.33),
        (("jobs",), {}),
    ],
)
def test_it_rejects_fields_of_the_wrong_type(path: tuple[str | int, ...], bad_value: Json) -> None:
    document = replaced(recorded_document("randread_4k_32jobs.json"), path, bad_value)

    with pytest.raises(ParseError):
        parse_fio(json.dumps(document))


def test_it_rejects_a_read_section_without_its_percentiles_key() -> None:
    document = recorded_document("randread_4k_32jobs.json")
    jobs = document["jobs"]
    assert isinstance(jobs, list) and isinstance(jobs[0], dict)
    read = jobs[0]["read"]
    assert isinstance(read, dict)
    clat = read["clat_ns"]
    assert isinstance(clat, dict)
    percentiles = clat["percentile"]
    assert isinstance(percentiles, dict)
    del percentiles["99.900000"]

    with pytest.raises(ParseError, match="99.900000"):
        parse_fio(json.dumps(document))


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
        parse_fio(text)


@given(st.lists(st.sampled_from(["fio: ", "{", "}", "\n", '"jobs"', ":", "[", "]", "x", " "])))
def test_arbitrary_fio_looking_fragments_raise_nothing_but_parse_error(parts: list[str]) -> None:
    with contextlib.suppress(ParseError):
        parse_fio("".join(parts))


@given(json_values)
def test_arbitrary_json_raises_nothing_but_parse_error(value: Json) -> None:
    with contextlib.suppress(ParseError):
        parse_fio(json.dumps(value))


@given(st.sampled_from(SUCCESSFUL_RUNS), st.data())
def test_a_recording_with_any_one_value_replaced_raises_nothing_but_parse_error(
    name: str, data: st.DataObject
) -> None:
    # Random JSON rarely gets past the first missing key; swapping one value
    # inside a real document exercises every field check instead.
    document = recorded_document(name)
    path = data.draw(st.sampled_from(list(paths(document))))
    with contextlib.suppress(ParseError):
        parse_fio(json.dumps(replaced(document, path, data.draw(json_values))))
