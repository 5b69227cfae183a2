"""Parse what ``fio --output-format=json`` prints on stdout (checked against fio 3.33).

The fields used::

    "fio version"                                   "fio-3.33"
    jobs[*].jobname, groupid                        one entry per job group with
                                                    --group_reporting, else one per job
    jobs[*].error                                   errno of a failed job, 0 if it ran
    jobs[*]."job options".numjobs                   a string, as given on the command line
    jobs[*].{read,write}.iops                       operations per second
    jobs[*].{read,write}.bw_bytes                   bytes per second
    jobs[*].read.clat_ns.percentile."50.000000"     completion latency, nanoseconds;
                                                    absent when no read completed
    jobs[*].read.lat_ns.mean                        total latency (submission to
                                                    completion), nanoseconds: with the
                                                    IOPS, Little's law checks the result

fio reports failures in three shapes, all of which become ``FioError``:

* an option it cannot use (e.g. a missing ``--directory``): no JSON at all, only
  ``fio: ...`` lines (stdout gets ``func=lstat, error=No such file or directory``);
* an I/O error during the run: JSON whose job has a non-zero ``error`` (errno),
  preceded on stdout by a ``fio: pid=..., err=...`` line;
* either of those with the JSON cut short.
"""

from __future__ import annotations

import os
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from benchmarks.parsers import ParseError
from benchmarks.parsers import json_fields as jf

_P50 = "50.000000"
_P99 = "99.000000"
_P999 = "99.900000"


class FioError(ParseError):
    """fio ran but reported a failure instead of (or as well as) results.

    ``errnos`` holds the errno of every failed job, so a caller can react to a
    specific one (EINVAL from O_DIRECT on a file system without it); it is empty
    when fio failed before any job started and printed only text.
    """

    def __init__(self, message: str, errnos: tuple[int, ...] = ()) -> None:
        super().__init__(message)
        self.message = message
        self.errnos = errnos


@dataclass(frozen=True)
class FioResult:
    # Summed over every job entry: with --group_reporting fio has already summed
    # the group's jobs into one entry, without it each job has its own.
    read_iops: float
    write_iops: float
    read_bw_bytes: float  # bytes per second
    write_bw_bytes: float
    # None when no read completed (a write-only job has no percentiles).
    read_clat_p50_ns: float | None
    read_clat_p99_ns: float | None
    read_clat_p999_ns: float | None
    fio_version: str
    jobs: int  # job processes that ran (numjobs summed over distinct job sections)
    read_lat_mean_ns: float | None = None  # None when no read completed


def parse_fio(text: str) -> FioResult:
    """Parse the stdout of one ``fio --output-format=json`` run."""
    preamble, body = _split_preamble(text)
    messages = [line.strip() for line in preamble if line.strip().startswith("fio:")]
    if body is None:
        if messages:
            raise FioError("fio failed before running any job: " + "; ".join(messages))
        raise ParseError("no fio JSON output found")

    document = jf.load_object(body, "fio")
    if "fio version" not in document:
        raise ParseError("not fio JSON output: no 'fio version' field")
    version = jf.string(document, "fio version")
    entries = jf.mappings(jf.sequence(document, "jobs"), "jobs")
    if not entries:
        raise ParseError("fio JSON output lists no jobs")
    _raise_job_errors(entries, messages)

    reads = [jf.mapping(entry, "read") for entry in entries]
    writes = [jf.mapping(entry, "write") for entry in entries]
    return FioResult(
        read_iops=sum(jf.number(r, "iops") for r in reads),
        write_iops=sum(jf.number(w, "iops") for w in writes),
        read_bw_bytes=sum(jf.number(r, "bw_bytes") for r in reads),
        write_bw_bytes=sum(jf.number(w, "bw_bytes") for w in writes),
        read_clat_p50_ns=_clat_percentile(reads, _P50),
        read_clat_p99_ns=_clat_percentile(reads, _P99),
        read_clat_p999_ns=_clat_percentile(reads, _P999),
        fio_version=version,
        jobs=_job_count(entries),
        read_lat_mean_ns=_lat_mean(reads),
    )


def _split_preamble(text: str) -> tuple[list[str], str | None]:
    # fio writes some error lines to stdout ahead of the JSON document, so the
    # document starts at the first line that opens an object, not at byte 0.
    lines = text.splitlines()
    for index, line in enumerate(lines):
        if line.lstrip().startswith("{"):
            return lines[:index], "\n".join(lines[index:])
    return lines, None


def _raise_job_errors(entries: Sequence[Mapping[str, object]], messages: list[str]) -> None:
    failures: list[str] = []
    errnos: list[int] = []
    for entry in entries:
        code = jf.count(entry, "error")
        if code:
            errnos.append(code)
            name = entry.get("jobname")
            failures.append(f"job {name!r} failed with errno {code} ({_strerror(code)})")
    if failures:
        # The preamble line names the failing call (e.g. func=io_u error), which
        # the JSON does not; keep it for whoever reads the run's error text.
        raise FioError("; ".join(failures + messages), tuple(errnos))


def _strerror(code: int) -> str:
    try:
        return os.strerror(code)
    except (ValueError, OverflowError):
        return "unknown error"


def _clat_percentile(reads: Sequence[Mapping[str, object]], key: str) -> float | None:
    values: list[float] = []
    for read in reads:
        clat = jf.mapping(read, "clat_ns")
        # fio leaves out "percentile" when the job completed no reads.
        if "percentile" in clat:
            values.append(jf.number(jf.mapping(clat, "percentile"), key))
    if not values:
        return None
    # Percentiles of separately reported jobs cannot be merged exactly without
    # their histograms; the worst job's figure is a safe upper bound. With
    # --group_reporting there is one entry and this is fio's own merged value.
    return max(values)


def _lat_mean(reads: Sequence[Mapping[str, object]]) -> float | None:
    # Weighted by each entry's IOPS, so separately reported jobs give the group's mean.
    weighted = total = 0.0
    for read in reads:
        iops = jf.number(read, "iops")
        lat = read.get("lat_ns")
        if iops <= 0 or not isinstance(lat, Mapping) or "mean" not in lat:
            continue
        weighted += iops * jf.number(lat, "mean")
        total += iops
    return weighted / total if total else None


def _job_count(entries: Sequence[Mapping[str, object]]) -> int:
    # Without --group_reporting each of numjobs clones gets its own entry, all
    # repeating the same "numjobs"; with it the group has one entry. Counting each
    # (jobname, groupid) once gives the same figure in both cases.
    sections: dict[tuple[str, int], int] = {}
    for entry in entries:
        key = (jf.string(entry, "jobname"), jf.count(entry, "groupid"))
        options = jf.mapping(entry, "job options")
        sections[key] = _numjobs(options)
    return sum(sections.values())


def _numjobs(options: Mapping[str, object]) -> int:
    value = options.get("numjobs", "1")
    if isinstance(value, str) and value.isascii() and value.isdigit() and len(value) < 10:
        return int(value)
    raise ParseError("'numjobs' must be a decimal string")

