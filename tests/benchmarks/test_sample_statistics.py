"""Repetitions become one sample with its spread and the 95% interval of its median; a
measurement repeats until that interval is within the stated precision, or says noisy."""

from __future__ import annotations

import itertools

import pytest

from contract import precision
from contract.precision import repeat_to_precision
from contract.sample import at_precision, percentile, summarise
from jobs.services import intake


def test_a_summary_has_the_median_and_the_spread() -> None:
    sample = summarise("network.tcp_throughput", [9.0, 10.0, 11.0, 10.0, 10.0])
    assert (sample.value, sample.min, sample.max, sample.n) == (10.0, 9.0, 11.0, 5)
    assert sample.unit == "Gbit/s"
    assert sample.p5 == pytest.approx(9.2) and sample.p95 == pytest.approx(10.8)
    assert sample.cv == pytest.approx(0.0707, abs=1e-3)
    # 10 +/- t(4) x sqrt(pi/2) x s / sqrt(5) = 2.776 x 1.2533 x 0.7071 / 2.236: +/- 11%
    assert sample.metadata["interval"] == pytest.approx([8.8998, 11.1002], abs=1e-4)
    assert sample.metadata["precision"] == 0.02
    assert sample.metadata.get("noisy") is True


def test_a_steady_measurement_is_not_flagged() -> None:
    steady = summarise("network.tcp_throughput", [10.0, 10.1, 10.0])
    assert "noisy" not in steady.metadata
    assert steady.metadata["interval"] == pytest.approx([9.8202, 10.1798], abs=1e-4)  # +/- 1.8%
    # The same three asked for +/- 1%: their interval does not reach it, and says so.
    tighter = summarise("network.tcp_throughput", [10.0, 10.1, 10.0], precision=0.01)
    assert tighter.metadata["noisy"] is True and tighter.metadata["precision"] == 0.01


def test_one_measurement_has_no_interval() -> None:
    assert {"interval", "noisy"}.isdisjoint(summarise("network.tcp_rtt", [0.2]).metadata)
    assert precision.interval([0.2]) is None and not precision.within([0.2], 0.5)


def test_a_median_of_zero_is_precise_only_without_spread() -> None:
    assert precision.within([0.0, 0.0, 0.0], 0.02)
    assert not precision.within([0.0, 0.0, 1.0], 0.02)


def test_percentile_interpolates_like_numpy() -> None:
    assert percentile([1.0, 2.0, 3.0, 4.0], 50) == 2.5


def test_noisy_measurements_repeat_up_to_their_maximum() -> None:
    values = itertools.cycle([1.0, 2.0])
    assert len(repeat_to_precision(lambda: next(values), float, 3, 6, 0.05)) == 6


def test_steady_measurements_repeat_as_asked() -> None:
    assert len(repeat_to_precision(lambda: 5.0, float, 3, 6, 0.02)) == 3


def test_a_measurement_stops_once_its_interval_is_within_the_precision() -> None:
    # +/- 17%, 9.0%, 6.1%, then 4.6% after the sixth: within +/- 5%, so no seventh.
    values = iter([10.0, 10.6, 9.5, 10.1, 10.0, 10.05, 9.95, 10.0])
    assert len(repeat_to_precision(lambda: next(values), float, 3, 8, 0.05)) == 6


def test_one_repetition_asked_for_takes_two_to_state_an_interval() -> None:
    assert len(repeat_to_precision(lambda: 5.0, float, 1, 4, 0.02)) == 2
    assert len(repeat_to_precision(lambda: 5.0, float, 1, 1, 0.02)) == 1  # the maximum holds


def test_a_figure_is_judged_against_its_profile_s_stated_precision() -> None:
    # The worker judges every probe's figures by the run's profile, whatever precision the
    # probe summarised at: +/- 4.6% is noisy at the default +/- 2%, within the quick 5%.
    sample = summarise("storage.randread_iops", [10.0, 10.6, 9.5, 10.1, 10.0, 10.05])
    assert sample.metadata["noisy"] is True
    quick = at_precision(sample, 0.05)
    assert "noisy" not in quick.metadata and quick.metadata["precision"] == 0.05
    assert quick.metadata["interval"] == sample.metadata["interval"]
    assert at_precision(quick, 0.02).metadata["noisy"] is True
    one = summarise("storage.randread_iops", [10.0])
    assert at_precision(one, 0.05) == one  # no interval to judge


@pytest.mark.parametrize("value", [1234567.8, 0.123456789, 987654.321, 8.0000049])
def test_repetitions_that_agree_exactly_have_an_interval_that_holds_their_median(
        value: float) -> None:
    # A cgroup-throttled disk gives the same IOPS every time: the interval is one point, and
    # kept to 6 digits it must still hold the median, or the intake refuses the result (the
    # disk fault lab's slow node lost its run so).
    sample = summarise("storage.randread_iops", [value] * 3)
    low, high = sample.metadata["interval"]
    assert low <= sample.value <= high
    assert high - low <= 1e-5 * value and "noisy" not in sample.metadata
    assert intake.sample_errors(sample.as_dict()) == {}
