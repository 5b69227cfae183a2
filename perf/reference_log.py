"""`make bench` (its reference-log part): the reference agent's memory and speed over a log of
a million records.

A reference's echo log gains a record per RTT test and its iperf3 log one per throughput test;
an agent that was down, or a reference outsiders flood with connections, has a long log to hand
in. Before #30 the platform's reader held every record of both logs in every web worker; the
agent now reads a bounded piece at a time. Printed against the baseline, measured in the same
run on the same file: the whole log read and parsed at once, as that reader did.

Target: the agent's peak memory under 2 x READ_BYTES (32 MiB), whatever the log's size, and
at least 50,000 records a second read (a day of re-tests at 10,000 hosts is about 200,000).
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
import time
import tracemalloc
from collections.abc import Callable
from pathlib import Path

from contract.iperf3_server import json_objects
from workers.host.reference_agent import MAX_BATCH, READ_BYTES, LogTail


def write_log(path: Path, records: int) -> None:
    with path.open("w") as log:
        for i in range(records):
            log.write(json.dumps({
                "token": f"{i:032x}", "client": f"10.0.{i % 250}.{i % 200 + 2}",
                "started": 1_760_000_000 + i, "round_trips": 20, "median_ms": 12.31,
                "rtts_ms": [12.3, 12.4, 12.2, 12.5], "paced_by": "reference"}) + "\n")


def measure(read: Callable[[], int]) -> tuple[float, int, float]:
    """(peak MiB, records, seconds) of ``read()``: timed alone, then again for its memory
    (tracemalloc slows Python down several times)."""
    start = time.perf_counter()
    count = read()
    seconds = time.perf_counter() - start
    tracemalloc.start()
    read()
    peak = tracemalloc.get_traced_memory()[1] / (1 << 20)
    tracemalloc.stop()
    return peak, count, seconds


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--records", type=int, default=1_000_000)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        log = Path(tmp) / "echo.jsonl"
        write_log(log, args.records)
        size_mib = log.stat().st_size / (1 << 20)

        def whole() -> int:
            return len(json_objects(log.read_bytes().decode("utf-8", "surrogateescape"))[0])

        def agent() -> int:
            tail, count = LogTail(log), 0
            while batch := tail.read(MAX_BATCH):
                count += len(batch)
                tail.handed_in()
            return count

        base_peak, base_n, base_s = measure(whole)
        peak, n, seconds = measure(agent)
    if n != base_n or n != args.records:
        print(f"reference log: the agent read {n} records, the whole-log read {base_n}, "
              f"of {args.records}", file=sys.stderr)
        return 1
    print(f"reference log of {args.records:,} records ({size_mib:.0f} MiB):")
    print(f"  peak memory: ours {peak:.1f} MiB, baseline (whole log at once) {base_peak:.1f} MiB, "
          f"ratio {peak / base_peak:.3f}; target < {2 * READ_BYTES >> 20} MiB "
          f"({'ok' if peak < 2 * (READ_BYTES >> 20) else 'MISS'})")
    print(f"  read rate: ours {n / seconds:,.0f} records/s, baseline {base_n / base_s:,.0f} "
          f"records/s, ratio {base_s / seconds:.3f}; target >= 50,000 "
          f"({'ok' if n / seconds >= 50_000 else 'MISS'})")
    return 0


if __name__ == "__main__":
    sys.exit(main())
