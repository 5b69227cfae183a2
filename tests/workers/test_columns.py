"""Tables that fit a terminal: display widths, wrapping between words, blocks of nodes."""

from __future__ import annotations

import io
import re
from collections.abc import Iterator

import pytest
from rich.console import Console

from contract import metrics
from workers import i18n
from workers.buyer import client, columns, display, side_by_side
from workers.buyer.display import Figure


@pytest.fixture(autouse=True)
def english() -> Iterator[None]:
    i18n.activate(i18n.ENGLISH)
    yield
    i18n.activate(i18n.language())


def screen(monkeypatch: pytest.MonkeyPatch, width: int = 100) -> io.StringIO:
    out = io.StringIO()
    monkeypatch.setattr(display, "console", Console(file=out, force_terminal=True, width=width,
                                                    color_system=None))
    return out


def test_a_chinese_character_takes_two_columns() -> None:
    assert columns.width("TCP 吞吐量") == 10
    assert columns.width("（多流并发）\nab") == 12


def test_a_line_breaks_between_words_and_between_chinese_characters_only() -> None:
    assert columns.wrap("TCP throughput, parallel streams", 16) == "TCP throughput,\nparallel streams"
    assert columns.wrap("同样数据打包为单文件读取（DataLoader）", 16) == (
        "同样数据打包为单\n文件读取\n（DataLoader）")
    assert columns.wrap("8 (7.1–8.9)", 9) == "8\n(7.1–8.9)"
    for line in columns.wrap("tmpfs 上 4 KiB 随机读延迟 p99.9", 10).split("\n"):
        assert columns.width(line) <= 10
        assert not re.search(r"(^|\s)(iB|KI|fs|99\.9)", line), line  # no Latin word cut


def test_a_column_is_never_narrower_than_its_widest_word() -> None:
    column = columns.Column("metric", ("inter-node TCP throughput, as the receiver counted it",))
    assert column.narrowest == len("throughput,")
    assert columns.widths([column], 10)[0] == len("throughput,")


def test_nodes_that_do_not_fit_go_in_even_blocks_beside_the_kept_columns() -> None:
    kept = [columns.Column("metric", ("TCP throughput",)), columns.Column("winner", ("hz-1",))]
    nodes = [columns.Column(f"node-{i}", ("47,240 (45,000–48,001)",)) for i in range(5)]
    parts = columns.blocks(kept, nodes, 100)
    assert len(parts) > 1 and sorted(i for part in parts for i in part) == list(range(5))
    assert max(map(len, parts)) - min(map(len, parts)) <= 1
    assert columns.blocks(kept, nodes[:1], 100) == [[0]]


NODES = ["hangzhou-west-lake-gpu-07", "ningbo-port-a100-02", "shenzhen-nanshan-h800-11"]


def recorded_compare() -> list[dict[str, object]]:
    """client.compare's rows for three nodes and every metric of the contract."""
    rows: list[dict[str, object]] = []
    for k, name in enumerate(sorted(metrics.METRICS)):
        row: dict[str, object] = {"metric": name, "unit": metrics.METRICS[name].unit}
        for j, node in enumerate(NODES):
            value = 47240.3 * (k + 1) / (j + 1)
            row[node] = Figure(value, value * 0.95, value * 1.05)
        row["winner"] = NODES[k % 3] if k % 4 else display.TIE
        rows.append(row)
    rows.append({"metric": "score", "unit": "0-100", **{n: 80.0 - j for j, n in enumerate(NODES)},
                 "winner": ""})
    return rows


@pytest.mark.parametrize("language", [i18n.ENGLISH, i18n.CHINESE])
def test_compare_fits_100_columns_with_every_name_whole(
        language: str, monkeypatch: pytest.MonkeyPatch) -> None:
    i18n.activate(language)
    out = screen(monkeypatch)
    display.print_rows(side_by_side.table_rows(recorded_compare()), "table", i18n._("side by side"),
                       kept=["metric", "unit"], once=["winner"])
    shown = out.getvalue()
    assert max(columns.width(line) for line in shown.splitlines()) <= 100
    for node in NODES:
        assert node in shown
    assert "47,240 (44,878–49,602)" in shown.replace("│", " ") or "(44,878–49,602)" in shown
    if language == i18n.CHINESE:
        assert "network." not in shown and "TCP 吞吐量（多流并发）" in shown.replace("\n", "")
        assert "存储" in shown and "平局" in shown
    else:
        assert "Data loading" in shown and "tie" in shown


def test_the_leaderboard_fits_100_columns_with_the_unit_in_its_title(
        monkeypatch: pytest.MonkeyPatch) -> None:
    out = screen(monkeypatch)
    rows = [{"rank": i + 1, "node": node, "provider": "west-lake-cloud-computing",
             "region": "zhejiang/hangzhou", "value": 9.41, "unit": "Gbit/s", "p5": 9.1,
             "p95": 9.62, "score": 87.5, "stale": False} for i, node in enumerate(NODES)]
    display.print_rows(client.leaderboard_table(rows), "table", "leaderboard: TCP throughput")
    shown = out.getvalue()
    assert max(columns.width(line) for line in shown.splitlines()) <= 100
    assert all(node in shown for node in NODES) and "9.41 (9.1–9.62)" in shown


def test_the_leaderboards_places_are_in_the_readers_language() -> None:
    rows = [{"rank": 1, "node": "hz-1", "provider": "West Lake DC", "region": "Zhejiang/Hangzhou",
             "value": 9.41, "unit": "Gbit/s", "p5": None, "p95": None, "score": 80.0,
             "stale": False},
            {"rank": 2, "node": "xx-1", "provider": "Far Away", "region": "Atlantis/Poseidonia",
             "value": 1.0, "unit": "Gbit/s", "p5": None, "p95": None, "score": 10.0,
             "stale": False}]
    i18n.activate(i18n.CHINESE)
    # The provider's name is its own; the places are the platform's words.
    assert [r["where"] for r in client.leaderboard_table(rows)] == [
        "West Lake DC 浙江省/杭州", "Far Away Atlantis/Poseidonia"]
    i18n.activate(i18n.ENGLISH)
    assert client.leaderboard_table(rows)[0]["where"] == "West Lake DC Zhejiang/Hangzhou"
