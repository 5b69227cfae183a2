"""A board value and its spread come from the same runs (#32): the median of the runs and
their p5-p95 across runs, the newest run's own spread beside it. The value is inside its
range for any set of runs.

Before: hz-a100-01 showed 61,463 IOPS, the mean of a loaded run (28,333) and one alone
(94,593), with the p5-p95 of one of them (88,235-100,859): a value outside its own range.
"""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any

from hypothesis import given
from hypothesis import strategies as st

from board import latest
from tests.fixtures import measured

T0 = datetime(2026, 12, 1, tzinfo=UTC)


def figure(i: int, value: float, p5: float | None, p95: float | None) -> latest.RunFigure:
    return latest.RunFigure(
        run_id=i + 1, finished_at=T0 - timedelta(hours=i), requested_by="buyer", value=value,
        unit="IOPS", n=3, p5=p5, p95=p95, cv=0.02, verified=False, source="", grade="host-reported")


# A run's own spread may be anything its host posted: it never decides the board's range.
RUNS = st.lists(st.tuples(st.floats(0.001, 1e7), st.floats(0.001, 1e7), st.floats(0.001, 1e7)),
                min_size=1, max_size=12)


@given(RUNS)
def test_the_board_value_is_inside_its_range_for_any_set_of_runs(
        runs: list[tuple[float, float, float]]) -> None:
    figures = [figure(i, v, min(a, b), max(a, b)) for i, (v, a, b) in enumerate(runs)]
    row = latest.board_row(1, "storage.randread_iops", "quick", "any", figures)
    assert row.p5 is not None and row.p95 is not None
    assert row.p5 <= row.value <= row.p95
    assert min(v for v, _, _ in runs) <= row.p5 and row.p95 <= max(v for v, _, _ in runs)
    # The newest run's own spread is kept beside it, as it was posted.
    assert (row.within_p5, row.within_p95) == (figures[0].p5, figures[0].p95)


def test_a_loaded_run_and_one_alone_give_a_value_within_their_range_on_the_board(
        buyer: Any, enrol_node: Any) -> None:
    node = enrol_node("hz-a100-01")
    measured(buyer, node, 0.0283)  # the run measured while three other nodes ran theirs
    measured(buyer, node, 0.0946)  # the one measured alone
    page = buyer.client().get("/api/v1/leaderboard?metric=network.tcp_throughput&evidence=any").json()
    (row,) = page["results"]
    assert row["value"] == (0.0283 + 0.0946) / 2 and row["runs"] == 2
    assert row["p5"] <= row["value"] <= row["p95"]
    assert (row["p5"], row["p95"]) == (0.0283 + 0.05 * (0.0946 - 0.0283),
                                       0.0283 + 0.95 * (0.0946 - 0.0283))
    # The newest run's own spread (its repetitions: 5% either side here), beside it.
    assert (row["within_p5"], row["within_p95"]) == (0.0946 * 0.95, 0.0946 * 1.05)
    html = buyer.client().get(f"/en/nodes/{node.node.pk}/").content.decode()
    assert "Across runs (p5–p95)" in html and "Newest run (p5–p95)" in html
