"""Stability across re-tests: one sentence-named test per rule (board/data/stability.yaml)."""

from __future__ import annotations

from datetime import datetime, timedelta

import pytest

from board.stability import (
    NOT_ENOUGH,
    STABLE,
    VARIES,
    VARIES_BY_HOUR,
    Observation,
    Pause,
    judge,
    rules,
)
from contract.numbers import hour_spans

DAY = datetime(2026, 11, 2)


def at(day: int, hour: int, value: float | None) -> Observation:
    return Observation(DAY + timedelta(days=day, hours=hour, minutes=17), value)


def steady(value: float = 0.94, hours: tuple[int, ...] = (2, 9, 14, 20, 23, 5)) -> list[Observation]:
    return [at(d, h, value * (1 + 0.01 * ((d + h) % 3 - 1))) for d in range(2) for h in hours]


def test_every_rule_has_a_value_and_a_source() -> None:
    assert set(rules()) >= {"min_retests", "min_hours", "stable_cv", "hour_ratio",
                            "max_paused_share", "max_missed_share", "recurring_pause_days"}


def test_a_steady_node_is_stable() -> None:
    s = judge(steady(), higher_is_better=True)
    assert s.verdict == STABLE and s.retests == 12 and s.hours == 6
    assert s.cv is not None and s.cv < 0.02


def test_a_node_shared_in_the_evening_varies_by_time_of_day_and_names_the_hours() -> None:
    obs = [at(d, h, 0.3 if h in (20, 21, 22) else 0.95) for d in range(2)
           for h in (3, 9, 14, 20, 21, 22)]
    s = judge(obs, higher_is_better=True)
    assert s.verdict == VARIES_BY_HOUR
    assert s.worst_hours == [20, 21, 22] and hour_spans(s.worst_hours) == "20:00-23:00"
    assert s.hour_ratio == pytest.approx(0.3 / 0.95)


def test_for_a_latency_the_worst_hours_are_the_highest() -> None:
    obs = [at(d, h, 30.0 if h == 20 else 5.0) for d in range(2) for h in (3, 9, 14, 20)]
    s = judge(obs, higher_is_better=False)
    assert s.verdict == VARIES_BY_HOUR and s.worst_hours == [20]


def test_fewer_than_six_retests_or_three_hours_is_not_enough_data() -> None:
    assert judge(steady()[:5], higher_is_better=True).verdict == NOT_ENOUGH
    same_two_hours = [at(d, h, 0.9) for d in range(5) for h in (9, 10)]
    assert judge(same_two_hours, higher_is_better=True).verdict == NOT_ENOUGH


def test_scatter_without_an_hour_pattern_varies() -> None:
    obs = [at(d, h, 0.9 if (d + h) % 2 else 0.5) for d in range(4) for h in (1, 2, 3)]
    s = judge(obs, higher_is_better=True)
    assert s.verdict == VARIES and s.cv is not None and s.cv > 0.1


def test_a_missed_retest_counts_against_the_node_not_as_a_gap() -> None:
    # Steady when it answers, but it did not answer two re-tests of fourteen.
    obs = steady() + [at(3, 20, None), at(4, 21, None)]
    s = judge(obs, higher_is_better=True)
    assert s.missed == 2 and s.verdict == VARIES


def test_a_node_paused_for_more_than_a_tenth_of_the_window_is_not_enough_data() -> None:
    window = (DAY, DAY + timedelta(days=7))
    pause = Pause(DAY + timedelta(days=1), DAY + timedelta(days=1, hours=18))  # 10.7%
    assert judge(steady(), True, [pause], window).verdict == NOT_ENOUGH
    short = Pause(DAY + timedelta(days=1), DAY + timedelta(days=1, hours=16))  # 9.5%
    assert judge(steady(), True, [short], window).verdict == STABLE


def test_pauses_always_at_the_same_hours_are_not_enough_data_even_when_short() -> None:
    # An hour a day, at 20:00, on three days: 1.8% of the week, but its busy hour, hidden.
    window = (DAY, DAY + timedelta(days=7))
    pauses = [Pause(DAY + timedelta(days=d, hours=20), DAY + timedelta(days=d, hours=21))
              for d in range(3)]
    s = judge(steady(), True, pauses, window)
    assert s.recurring_pause_hour == 20 and s.verdict == NOT_ENOUGH
    # The same hour on two days only is maintenance, not a pattern.
    assert judge(steady(), True, pauses[:2], window).verdict == STABLE


def test_hour_spans_join_neighbouring_hours() -> None:
    assert hour_spans([2, 14, 15]) == "02:00-03:00, 14:00-16:00"
    assert hour_spans([23]) == "23:00-00:00"


def test_storage_that_varies_three_fold_reads_as_shared_or_network_storage() -> None:
    from board.stability_board import badge, finding

    obs = [at(d, h, 30_000.0 if (d + h) % 2 else 90_000.0) for d in range(4) for h in (1, 2, 3)]
    s = judge(obs, higher_is_better=True)
    f = finding("storage.randread_iops", s)
    assert s.verdict == VARIES and f is not None
    assert f.verdict == ("4 KiB random read IOPS (fio) varies 3x between re-tests: likely "
                         "shared or network storage")
    assert badge(s) == "varies" and badge(judge(steady(), True)) == "stable"
    assert finding("storage.randread_iops", judge(steady(), True)) is None
