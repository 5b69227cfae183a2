"""The SVG charts: one mark per figure with its value on hover, labelled axes with round
ticks, labels that stay clear of the marks, numbers people read, nothing for no data."""

from __future__ import annotations

import re
from datetime import UTC, datetime, timedelta

from web.charts import (
    Bar,
    LinkCell,
    MatrixWords,
    Point,
    bar_chart,
    line_chart,
    link_matrix,
    number,
    scatter_chart,
    ticks,
)


def texts(svg: str, cls: str) -> list[str]:
    return re.findall(rf'<text class="{cls}"[^>]*>([^<]*)</text>', svg)


def xs(svg: str, cls: str) -> list[float]:
    return [float(x) for x in re.findall(rf'<text class="{cls}" x="([\d.]+)"', svg)]


def test_numbers_are_read_as_people_write_them() -> None:
    assert [number(v) for v in (47240.0, 9.41, 0.0123, 12.5, 0.19, 0.0, 1234567.0)] == [
        "47,240", "9.41", "0.0123", "12.5", "0.19", "0", "1,234,567"]
    assert ticks(0, 9.5) == [0, 2, 4, 6, 8, 10] and ticks(0, 0.9)[-1] >= 0.9


def test_a_bar_per_group_with_its_whisker_on_a_labelled_axis() -> None:
    svg = bar_chart([Bar("Zhejiang", 9.0, 8.0, 9.5, best=True), Bar("Guangdong", 1.0, 0.9, 1.1)],
                    "Gbit/s", "TCP throughput (Gbit/s)")
    assert svg.count('class="bar"') == 2 and svg.count('class="whisker"') == 2
    assert "Zhejiang: 9 Gbit/s (p5–p95 8–9.5)" in svg  # hover
    assert texts(svg, "axis-label") == ["TCP throughput (Gbit/s)"]
    assert texts(svg, "tick") == ["0", "2", "4", "6", "8", "10"]
    # Labels end left of the plot; each value starts right of its whisker's end.
    plot_left = float(re.search(r'<rect class="bar" x="([\d.]+)"', svg).group(1))  # type: ignore[union-attr]
    assert all(x < plot_left for x in xs(svg, "label"))
    whisker_ends = [float(m) for m in re.findall(r'H([\d.]+)M', svg)]
    assert all(v > w for v, w in zip(xs(svg, "value"), whisker_ends, strict=True))
    assert svg.count("#e07b39") == 1  # the winner in the accent colour


def test_labels_are_escaped() -> None:
    assert "&lt;script&gt;" in bar_chart([Bar("<script>", 1.0)], "ms")


def test_a_history_point_per_measurement_at_its_date() -> None:
    start = datetime(2026, 11, 1, 9, tzinfo=UTC)
    svg = line_chart([(start, 1.0), (start + timedelta(days=3), 2.0), (start + timedelta(days=9), 1.5)],
                     "ms", "TCP RTT", "date measured")
    assert svg.count("<circle") == 3 and "<polyline" in svg
    assert "2026-11-04 09:00: 2 ms" in svg  # hover: date and value
    assert {"2026-11-01", "2026-11-04", "2026-11-10"} <= set(texts(svg, "tick"))
    assert texts(svg, "axis-label") == ["date measured", "TCP RTT (ms)"]
    # The points sit at their dates: the gap of 3 days is half that of 6.
    cx = [float(x) for x in re.findall(r'<circle class="point" cx="([\d.]+)"', svg)]
    assert abs((cx[2] - cx[1]) - 2 * (cx[1] - cx[0])) < 1.0


def test_a_history_of_one_day_is_ticked_and_titled_by_time_of_day() -> None:
    # Before (#34): 15:15, 15:17, 15:18 ticked under the axis title "date measured".
    start = datetime(2026, 12, 3, 15, 15, tzinfo=UTC)
    svg = line_chart([(start, 1.0), (start + timedelta(minutes=2), 2.0)], "ms", "TCP RTT",
                     "date measured", time_title="time measured on %(date)s")
    assert {"15:15", "15:17"} <= set(texts(svg, "tick"))
    assert texts(svg, "axis-label")[0] == "time measured on 2026-12-03"


def test_price_against_score_marks_the_cheap_and_good_corner() -> None:
    svg = scatter_chart([Point("cheap-good", 10_000, 90), Point("dear-poor", 40_000, 30),
                         Point("mid", 20_000, 60)], "price (CNY/month)", "score", "cheap and good",
                        {"node": "node"})
    assert svg.count('class="point"') == 3 and texts(svg, "corner-label") == ["cheap and good"]
    assert texts(svg, "axis-label")[:2] == ["price (CNY/month)", "score"]
    corner = re.search(r'class="corner" x="([\d.]+)" y="([\d.]+)" width="([\d.]+)" height="([\d.]+)"', svg)
    x, y, w, h = (float(v) for v in corner.groups())  # type: ignore[union-attr]
    cx, cy = (float(v) for v in re.search(r'class="point" cx="([\d.]+)" cy="([\d.]+)"', svg).groups())  # type: ignore[union-attr]
    assert x <= cx <= x + w and y <= cy <= y + h  # the cheap, good node is inside the corner


def test_the_link_heat_map_has_its_scale_and_both_axes() -> None:
    svg = link_matrix(["a", "b"], [LinkCell("a", "b", 9.4, 0.2, True), LinkCell("b", "a", 0.19, 0.2, False)],
                      MatrixWords("发送端", "接收端", "两端一致", "接收端未确认"))
    assert svg.count('class="cell"') == 2 and 'class="scale"' in svg
    assert texts(svg, "axis-label") == ["接收端 →", "发送端 →"]
    assert "b → a: 0.19 Gbit/s, RTT 0.2 ms (接收端未确认)" in svg and "9.4 Gbit/s" in texts(svg, "tick")


def test_no_data_no_chart() -> None:
    assert bar_chart([], "ms") == "" and line_chart([], "ms", "", "") == ""
    assert scatter_chart([], "", "", "", {}) == "" and link_matrix([], []) == ""
