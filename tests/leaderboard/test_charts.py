"""The SVG charts: one bar or point per figure, labels escaped, nothing for no data."""

from __future__ import annotations

from leaderboard.charts import Bar, bar_chart, line_chart


def test_a_bar_per_group_with_its_whisker() -> None:
    svg = bar_chart([Bar("Zhejiang", 9.0, 8.0, 9.5), Bar("Guangdong", 1.0, 0.9, 1.1)], "Gbit/s")
    assert svg.count("<rect") == 2 and svg.count("<line") == 2
    assert "Zhejiang: 9 Gbit/s" in svg


def test_labels_are_escaped() -> None:
    assert "&lt;script&gt;" in bar_chart([Bar("<script>", 1.0)], "ms")


def test_a_history_point_per_measurement() -> None:
    svg = line_chart([1.0, 2.0, 1.5], ["a", "b", "c"], "ms")
    assert svg.count("<circle") == 3 and "<polyline" in svg


def test_no_data_no_chart() -> None:
    assert bar_chart([], "ms") == "" and line_chart([], [], "ms") == ""
