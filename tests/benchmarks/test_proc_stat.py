"""The host's CPU shares during a probe, from /proc/stat and /proc/loadavg as recorded on
this machine (tests/data/proc: a 2-core VM, three seconds apart, a test suite running)."""

from __future__ import annotations

from pathlib import Path

import pytest

from benchmarks import conditions
from benchmarks.parsers import ParseError
from benchmarks.parsers.proc_stat import CpuTimes, parse_loadavg, parse_stat, shares

DATA = Path(__file__).resolve().parents[1] / "data" / "proc"


def test_the_aggregate_cpu_line_is_read_and_the_per_cpu_lines_are_not() -> None:
    before = parse_stat((DATA / "stat-before.txt").read_text())
    assert before == CpuTimes(274661, 737, 153646, 584981, 15285, 0, 26160, 686)


def test_shares_between_two_readings_are_of_the_time_that_passed() -> None:
    before = parse_stat((DATA / "stat-before.txt").read_text())
    after = parse_stat((DATA / "stat-after.txt").read_text())
    found = shares(before, after)
    # 518 user, 88 system, 2 softirq, 2 steal ticks: the two CPUs busy the whole time.
    assert found.ticks == 610
    assert found.busy == pytest.approx(608 / 610) and found.steal == pytest.approx(2 / 610)
    assert found.iowait == 0.0


def test_an_old_kernel_without_steal_counts_none_and_a_reboot_is_refused() -> None:
    assert parse_stat("cpu  10 0 5 100 1 0 0\n").steal == 0
    with pytest.raises(ParseError, match="backwards"):
        shares(CpuTimes(9, 0, 0, 9, 0, 0, 0, 0), CpuTimes(1, 0, 0, 1, 0, 0, 0, 0))
    with pytest.raises(ParseError, match="no aggregate"):
        parse_stat("cpu0 1 2 3 4\n")


def test_loadavg() -> None:
    load = parse_loadavg((DATA / "loadavg.txt").read_text())
    assert load.one >= 0 and load.tasks >= load.running >= 1
    with pytest.raises(ParseError):
        parse_loadavg("1.0 busy")


def test_conditions_during_a_probe_from_a_proc_directory(tmp_path: Path) -> None:
    (tmp_path / "stat").write_text((DATA / "stat-before.txt").read_text())
    before = conditions.read(tmp_path)
    (tmp_path / "stat").write_text((DATA / "stat-after.txt").read_text())
    (tmp_path / "loadavg").write_text("2.30 1.01 3.56 7/243 27228\n")
    found = conditions.during(before, tmp_path)
    assert found["cpu_busy"] == 0.997 and found["cpu_steal"] == 0.003
    assert found["load1"] == 2.3 and found["cpus"] >= 1
    # Nothing readable: nothing made up.
    assert conditions.during(conditions.read(tmp_path / "none"), tmp_path / "none") == {}
