"""Repetitions become one sample with its spread; noisy ones are repeated more and flagged."""

from __future__ import annotations

import itertools

import pytest

from contract.sample import percentile, repeat_until_stable, summarise


def test_a_summary_has_the_median_and_the_spread() -> None:
    sample = summarise("network.tcp_throughput", [9.0, 10.0, 11.0, 10.0, 10.0])
    assert (sample.value, sample.min, sample.max, sample.n) == (10.0, 9.0, 11.0, 5)
    assert sample.unit == "Gbit/s"
    assert sample.p5 == pytest.approx(9.2) and sample.p95 == pytest.approx(10.8)
    assert sample.cv == pytest.approx(0.0707, abs=1e-3)
    assert sample.metadata.get("noisy") is True


def test_a_steady_measurement_is_not_flagged() -> None:
    assert "noisy" not in summarise("network.tcp_throughput", [10.0, 10.1, 10.0]).metadata


def test_percentile_interpolates_like_numpy() -> None:
    assert percentile([1.0, 2.0, 3.0, 4.0], 50) == 2.5


def test_noisy_measurements_repeat_up_to_twice_as_often() -> None:
    values = itertools.cycle([1.0, 2.0])
    assert len(repeat_until_stable(lambda: next(values), float, 3)) == 6


def test_steady_measurements_repeat_as_asked() -> None:
    assert len(repeat_until_stable(lambda: 5.0, float, 3)) == 3
