"""The storage probe's fio runs: 4k random reads (IOPS, latency), 1M sequential reads and writes.

fio is a command already, so these run from the probe through ``benchmarks.runner``.
"""

from __future__ import annotations

import errno
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from benchmarks import runner
from benchmarks.parsers import ParseError
from benchmarks.parsers.fio import FioError, FioResult, parse_fio
from benchmarks.probes.base import ProbeError
from contract.sample import Sample, summarise

GB = 1e9
MIB = 1024 * 1024
NS_PER_US = 1000.0
# psync is built into every fio; libaio/io_uring may be missing or disabled in containers.
FIO_IOENGINE = "psync"
# psync is synchronous: each job has one I/O in flight (what Little's law is checked with).
FIO_IODEPTH = 1
# All three fio runs in a directory share these files, so fio lays them out once.
FIO_FILENAME_FORMAT = "benchctl-fio.$jobnum"


@dataclass(frozen=True)
class FioPlan:
    """How every fio run of a probe run is set up (from the probe's params)."""

    numjobs: int
    job_mib: int  # the test file of each job
    runtime_s: int
    seed: int  # the platform's: offsets a host cannot know before the run

    @property
    def total_bytes(self) -> int:
        return self.job_mib * self.numjobs * MIB


def fio_samples(directory: Path, suffix: str, meta: dict[str, Any], reps: int, plan: FioPlan,
                step: Callable[[], None], sequential: bool) -> list[Sample]:
    """Random reads (and, if ``sequential``, sequential reads and writes) in ``directory``;
    ``step`` is called before each fio run."""
    direct: dict[str, Any] = {"direct": 1}

    def fio(rw: str, bs: str) -> FioResult:
        step()
        return run_fio(directory, rw, bs, direct, plan)

    randread = [fio("randread", "4k") for _ in range(reps)]
    first = randread[0]
    fio_meta = meta | direct | {
        "tool": "fio", "version": first.fio_version, "ioengine": FIO_IOENGINE,
        "numjobs": first.jobs, "size_mib_per_job": plan.job_mib, "runtime_s": plan.runtime_s,
    }
    samples = [
        summarise(f"storage.randread_iops{suffix}", [r.read_iops for r in randread],
                  fio_meta | {"bs": "4k"}),
    ]
    for metric, attr in (("clat_p50", "read_clat_p50_ns"), ("clat_p99", "read_clat_p99_ns"),
                         ("clat_p999", "read_clat_p999_ns"), ("lat_mean", "read_lat_mean_ns")):
        values = [_required(getattr(r, attr), attr) / NS_PER_US for r in randread]
        samples.append(summarise(f"storage.randread_{metric}{suffix}", values,
                                 fio_meta | {"bs": "4k", "iodepth": FIO_IODEPTH}))
    if sequential:
        seqread = [fio("read", "1M") for _ in range(reps)]
        seqwrite = [fio("write", "1M") for _ in range(reps)]
        samples += [
            summarise(f"storage.seqread_bw{suffix}", [r.read_bw_bytes / GB for r in seqread],
                      fio_meta | {"bs": "1M"}),
            summarise(f"storage.seqwrite_bw{suffix}",
                      [r.write_bw_bytes / GB for r in seqwrite],
                      fio_meta | {"bs": "1M", "end_fsync": 1}),
        ]
    # The fio files can be large and on tmpfs they are RAM: free them now.
    for path in directory.glob("benchctl-fio.*"):
        path.unlink(missing_ok=True)
    return samples


def run_fio(directory: Path, rw: str, bs: str, direct: dict[str, Any], plan: FioPlan) -> FioResult:
    """One fio run; ``direct`` is updated in place if O_DIRECT turns out unsupported."""
    argv = ["fio", f"--name={rw}", f"--directory={directory}",
            f"--filename_format={FIO_FILENAME_FORMAT}", f"--rw={rw}", f"--bs={bs}",
            f"--numjobs={plan.numjobs}", f"--size={plan.job_mib}m",
            f"--runtime={plan.runtime_s}", "--time_based", "--group_reporting",
            f"--ioengine={FIO_IOENGINE}", "--output-format=json", f"--randseed={plan.seed}"]
    if rw == "write":
        # Without it buffered (fallback) writes would be timed into the page cache.
        argv.append("--end_fsync=1")
    # Laying out the files happens before the timed part; allow for a slow disk.
    timeout = plan.runtime_s + 120 + plan.total_bytes / (20 * MIB)
    while True:
        try:
            result = runner.run(argv + [f"--direct={direct['direct']}"], timeout=timeout)
        except (runner.CommandTimeout, runner.CommandNotFound) as exc:
            raise ProbeError(f"fio {rw} in {directory}: {exc}") from None
        try:
            return parse_fio(result.stdout)
        except FioError as exc:
            # tmpfs before Linux 6.6 (and some FUSE/network file systems) reject
            # O_DIRECT with EINVAL; measure buffered I/O there and say so.
            if direct["direct"] == 1 and errno.EINVAL in exc.errnos:
                direct["direct"] = 0
                direct["direct_fallback"] = "O_DIRECT not supported here (EINVAL); buffered I/O"
                continue
            raise ProbeError(f"fio {rw} in {directory} failed: {exc}"
                             f"{_stderr_tail(result.stderr)}") from None
        except ParseError as exc:
            raise ProbeError(f"fio {rw} in {directory} printed unexpected output: {exc}"
                             f"{_stderr_tail(result.stderr)}") from None


def _required(value: float | None, what: str) -> float:
    if value is None:
        raise ProbeError(f"fio reported no {what} for a read test")
    return value


def _stderr_tail(stderr: str) -> str:
    tail = stderr.strip()[-500:]
    return f" (stderr: {tail})" if tail else ""
