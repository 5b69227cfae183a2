"""What benchctl prints to people: figures, ties, progress in a log, and their language."""

from __future__ import annotations

import ast
import gettext
import io
import json
import os
import re
import shutil
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from rich.console import Console

from lab.procs import REPO
from tests.fixtures import measured
from workers import i18n
from workers.buyer import client, display, side_by_side
from workers.buyer.display import Figure, number, print_rows

CATALOGUE = Path(i18n.LOCALE_DIR) / "zh_Hans" / "LC_MESSAGES"
LOCALE_VARIABLES = ("LANGUAGE", "LC_ALL", "LC_MESSAGES", "LANG")


@pytest.fixture(autouse=True)
def english() -> Iterator[None]:
    """In-process tests read English unless they switch; the next test gets the default back."""
    i18n.activate(i18n.ENGLISH)
    yield
    i18n.activate(i18n.language())


def benchctl(*args: str, lang: str, **env: str) -> subprocess.CompletedProcess[str]:
    """benchctl as a person runs it, with only LANG (and ``env``) saying the language."""
    base = {k: v for k, v in os.environ.items() if k not in LOCALE_VARIABLES}
    return subprocess.run([sys.executable, "-m", "workers.cli", *args], cwd=REPO, timeout=120,
                          capture_output=True, text=True, encoding="utf-8", check=False,
                          env={**base, "COLUMNS": "200", "LANG": lang, **env})


# Figures


def test_figures_have_thousands_separators_and_never_an_exponent() -> None:
    assert number(47240.3) == "47,240"
    assert number(9.41) == "9.41"
    assert number(9.4123) == "9.412"
    assert number(0.0123) == "0.0123"
    assert number(0.00001234) == "0.00001234"
    assert number(1234567.8) == "1,234,568"
    assert number(12000) == "12,000"
    assert number(0.0) == "0" and number(None) == ""
    for exponent in range(-7, 12):
        value = 4.7243 * 10.0 ** exponent
        text = number(value)
        assert "e" not in text.lower(), text
        # Four significant digits at least: within 0.05 % of the figure.
        assert float(text.replace(",", "")) == pytest.approx(value, rel=5e-4), text


def test_a_table_shows_figures_for_people_and_json_and_csv_keep_the_raw_numbers(
        capsys: pytest.CaptureFixture[str]) -> None:
    rows = [{"node": "hz-1", "metric": "storage.seq_read", "value": 47240.3, "unit": "MB/s",
             "p5": 45000.25, "p95": 0.0123, "n": 12000}]
    print_rows(rows, "table")
    table = capsys.readouterr().out
    assert "47,240" in table and "45,000" in table and "0.0123" in table and "12,000" in table
    assert "e+0" not in table
    print_rows(rows, "json")
    assert json.loads(capsys.readouterr().out) == rows
    print_rows(rows, "csv")
    csv_line = capsys.readouterr().out.splitlines()[1]
    assert csv_line == "hz-1,storage.seq_read,47240.3,MB/s,45000.25,0.0123,12000"


def test_a_compare_cell_spreads_into_columns_for_machines(capsys: pytest.CaptureFixture[str]) -> None:
    rows = [{"metric": "network.tcp_rtt", "unit": "ms", "hz-1": Figure(0.41234, 0.4, 0.5),
             "winner": display.TIE}]
    print_rows(rows, "table")
    assert "0.4123 (0.4–0.5)" in capsys.readouterr().out
    print_rows(rows, "json")
    assert json.loads(capsys.readouterr().out) == [{
        "metric": "network.tcp_rtt", "unit": "ms", "hz-1": 0.41234, "hz-1 p5": 0.4, "hz-1 p95": 0.5,
        "winner": "tie"}]


# Ties


def test_equal_figures_are_a_tie_and_a_better_one_wins() -> None:
    assert client.winner({"hz-1": 9.0, "hz-2": 9.0}, higher_is_better=True) == display.TIE
    # Equal as shown: nobody can see a winner in 9.41 against 9.41.
    assert client.winner({"hz-1": 9.41002, "hz-2": 9.41004}, higher_is_better=True) == display.TIE
    assert client.winner({"hz-1": 9.0, "hz-2": 9.0, "hz-3": 1.0}, higher_is_better=False) == "hz-3"
    assert client.winner({"hz-1": 9.42, "hz-2": 9.41}, higher_is_better=True) == "hz-1"
    assert client.winner({"hz-1": 9.42, "hz-2": 9.41}, higher_is_better=False) == "hz-2"


def test_a_node_named_tie_is_a_node_and_the_tie_is_translated() -> None:
    i18n.activate(i18n.CHINESE)
    named_tie = client.winner({"tie": 2.0, "hz-2": 1.0}, higher_is_better=True)
    assert display.cell(named_tie) == "tie"
    assert display.cell(display.TIE) == "平局"


def test_compare_reports_a_tie_as_a_tie(live_server: Any, buyer: Any, enrol_node: Any,
                                        capsys: pytest.CaptureFixture[str]) -> None:
    a, b = enrol_node("hz-1"), enrol_node("hz-2")
    for gbps in (7.0, 9.0):  # two runs each: the board's 8 and its p5-p95 across them
        measured(buyer, a, gbps, extra={"network.tcp_rtt": 4.0, "network.icmp_rtt_avg": 1.0000001})
        measured(buyer, b, gbps, extra={"network.tcp_rtt": 2.0, "network.icmp_rtt_avg": 1.0})
    rows = client.compare(client.Client(live_server.url, buyer.token), [a.node.pk, b.node.pk])
    by_metric = {r["metric"]: r for r in rows}
    assert by_metric["network.tcp_throughput"]["winner"] == "tie"
    assert by_metric["network.icmp_rtt_avg"]["winner"] == "tie"
    assert by_metric["network.tcp_rtt"]["winner"] == "hz-2"
    print_rows(side_by_side.table_rows(rows), "table", kept=["metric", "unit", "winner"])
    table = capsys.readouterr().out
    assert re.search(r"TCP throughput .*8 \(7\.1–8\.9\).*8 \(7\.1–8\.9\).* tie", table)
    print_rows(rows, "json")
    machine = {r["metric"]: r for r in json.loads(capsys.readouterr().out)}
    assert machine["network.tcp_throughput"]["hz-1"] == 8.0
    assert machine["network.tcp_throughput"]["hz-1 p5"] == pytest.approx(7.1)
    i18n.activate(i18n.CHINESE)
    print_rows(side_by_side.table_rows(rows), "table", i18n._("side by side"))
    chinese = capsys.readouterr().out
    assert "节点对比" in chinese and "胜出" in chinese and "指标" in chinese
    assert re.search(r"TCP 吞吐量 .* 平局", chinese) and "网络" in chinese
    assert "TCP 往返时延（回显）" in chinese and "hz-2" in chinese  # node names stay as they are
    assert "network." not in chinese


# Progress in a log


class ScriptedPlatform:
    """The platform's answers to GET /api/v1/benchmarks/{id}, one per poll."""

    def __init__(self, name: str, states: list[tuple[str, dict[str, Any]]]) -> None:
        self.jobs = [{"id": 7, "status": "succeeded" if status == "succeeded" else "running",
                      "runs": [{"id": 70, "node": {"name": name}, "status": status,
                                "progress": progress}]} for status, progress in states]

    def call(self, method: str, path: str) -> dict[str, Any]:
        assert (method, path) == ("GET", "/api/v1/benchmarks/7")
        return self.jobs.pop(0)


LONG_NAME = "hangzhou-west-lake-dc-rack07-gpu-node-12"
STATES = [("queued", {}), ("running", {"probe": "network", "step": 1, "steps": 2}),
          ("running", {"probe": "network", "step": 1, "steps": 2}),
          ("running", {"probe": "network", "step": 2, "steps": 2}), ("succeeded", {})]


@pytest.fixture
def no_waiting(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(client.time, "sleep", lambda seconds: None)
    for forcing in ("FORCE_COLOR", "TTY_COMPATIBLE"):
        monkeypatch.delenv(forcing, raising=False)


def test_progress_to_a_log_is_a_line_per_change_with_the_whole_node_name(
        no_waiting: None, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    assert len(LONG_NAME) == 40
    monkeypatch.setattr(display, "console", Console())  # on pytest's captured, non-terminal stdout
    job = client.follow(ScriptedPlatform(LONG_NAME, STATES), 7)  # type: ignore[arg-type]
    assert job["status"] == "succeeded"
    assert capsys.readouterr().out.splitlines() == [
        f"{LONG_NAME}: queued", f"{LONG_NAME}: running network 1/2",
        f"{LONG_NAME}: running network 2/2", f"{LONG_NAME}: succeeded"]


def test_a_table_to_a_log_keeps_every_name_and_figure_whole(
        no_waiting: None, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    monkeypatch.delenv("COLUMNS", raising=False)
    monkeypatch.setattr(display, "console", Console())  # 80 columns, not a terminal
    print_rows([{"node": LONG_NAME, "metric": "network.tcp_throughput", "value": 47240.3,
                 "unit": "Mbit/s", "p5": 45000.2, "p95": 48000.9, "n": 5,
                 "peer": "ref-hangzhou-1"}], "table")
    line = next(row for row in capsys.readouterr().out.splitlines() if LONG_NAME in row)
    assert "network.tcp_throughput" in line and "ref-hangzhou-1" in line and "…" not in line


def test_progress_on_a_terminal_keeps_the_bars(no_waiting: None, monkeypatch: pytest.MonkeyPatch) -> None:
    screen = Console(file=io.StringIO(), force_terminal=True, width=100)
    monkeypatch.setattr(display, "console", screen)
    client.follow(ScriptedPlatform(LONG_NAME, STATES), 7)  # type: ignore[arg-type]
    shown = screen.file.getvalue()  # type: ignore[attr-defined]
    assert "━" in shown and f"{LONG_NAME}: succeeded" not in shown


# Language


def test_the_locale_chooses_chinese_in_gettexts_order() -> None:
    assert i18n.language({"LANG": "zh_CN.UTF-8"}) == i18n.CHINESE
    for chinese in ("zh_SG.UTF-8", "zh_Hans", "zh", "zh_CN.GB18030"):
        assert i18n.language({"LANG": chinese}) == i18n.CHINESE, chinese
    assert i18n.language({"LANG": "C"}) == i18n.ENGLISH
    assert i18n.language({"LANG": "en_US.UTF-8"}) == i18n.ENGLISH
    assert i18n.language({}) == i18n.ENGLISH
    assert i18n.language({"LANG": "zh_CN.UTF-8", "LC_ALL": "C"}) == i18n.ENGLISH
    assert i18n.language({"LANG": "C", "LC_MESSAGES": "zh_CN.UTF-8"}) == i18n.CHINESE
    assert i18n.language({"LANG": "zh_CN.UTF-8", "LANGUAGE": "en_GB:zh_CN"}) == i18n.ENGLISH
    # A preference without a catalogue (French) gives way to the next one.
    assert i18n.language({"LANG": "C", "LANGUAGE": "fr_FR:zh_CN"}) == i18n.CHINESE


def test_an_error_and_its_fix_are_chinese_under_a_chinese_locale_and_english_under_c(
        tmp_path: Path) -> None:
    nothing = {"BENCH_URL": "", "BENCH_TOKEN": "", "BENCH_CLIENT_CONFIG": str(tmp_path / "none.json")}
    chinese = benchctl("leaderboard", lang="zh_CN.UTF-8", **nothing)
    assert chinese.returncode == 2
    assert chinese.stderr.strip() == (f"benchctl：没有平台地址：请传入 --url、设置 BENCH_URL，或写入 "
                                      f"{tmp_path / 'none.json'}")
    english = benchctl("leaderboard", lang="C", **nothing)
    assert english.stderr.startswith("benchctl: no platform URL: pass --url, set BENCH_URL")
    missing = tmp_path / "missing.json"
    assert benchctl("verify", str(missing), lang="zh_CN.UTF-8").stderr.startswith(
        f"benchctl：无法读取 {missing}：")
    assert benchctl("verify", str(missing), lang="C").stderr.startswith(f"benchctl: cannot read {missing}:")


def test_doctor_names_its_checks_and_fixes_in_chinese(tmp_path: Path) -> None:
    done = benchctl("--config", str(tmp_path / "none.json"), "doctor", lang="zh_CN.UTF-8")
    lines = done.stdout.splitlines()
    assert any(line.startswith("待修 节点配置: ") for line in lines), done.stdout
    assert "     解决办法：benchctl enroll --url URL --token TOKEN" in lines
    english = benchctl("--config", str(tmp_path / "none.json"), "doctor", lang="C").stdout.splitlines()
    assert any(line.startswith("FIX  node config: ") for line in english)
    assert "     fix: benchctl enroll --url URL --token TOKEN" in english


# The catalogue


# Written alike in both languages (the web's catalogue has them so too).
SAME_IN_CHINESE = {"GPU"}


def marked_messages() -> set[str]:
    """Every literal benchctl passes to _() or gettext_noop(): in every module that takes
    them from workers.i18n, the lab's commands included, and the wording it shares with the
    platform: the estimate outcomes, the metrics' labels and their areas."""
    found = set()
    workers = Path(i18n.__file__).parent
    sources = [p for p in sorted([*workers.rglob("*.py"), *(REPO / "lab").glob("*.py")])
               if "from workers.i18n import" in p.read_text()] + [
        REPO / "contract" / name for name in ("outcomes.py", "metrics.py", "areas.py")]
    assert workers / "host" / "commands.py" in sources and REPO / "lab" / "commands.py" in sources
    for source in sources:
        for node in ast.walk(ast.parse(source.read_text())):
            if (isinstance(node, ast.Call) and isinstance(node.func, ast.Name)
                    and node.func.id in ("_", "gettext_noop") and node.args
                    and isinstance(node.args[0], ast.Constant)):
                found.add(node.args[0].value)
    return found


def test_every_marked_message_has_a_chinese_translation_with_the_same_fields() -> None:
    with (CATALOGUE / "benchctl.mo").open("rb") as mo:
        catalogue = gettext.GNUTranslations(mo)
    messages = marked_messages()
    assert len(messages) > 100
    fields = re.compile(r"\{\w*\}|%\(\w+\)s")
    for message in messages:
        translated = catalogue.gettext(message)
        assert translated != message or message in SAME_IN_CHINESE, f"untranslated: {message!r}"
        assert sorted(fields.findall(translated)) == sorted(fields.findall(message)), message


@pytest.mark.skipif(shutil.which("msgfmt") is None, reason="needs gettext's msgfmt")
def test_the_committed_mo_is_the_po_compiled(tmp_path: Path) -> None:
    subprocess.run(["msgfmt", "-c", "-o", str(tmp_path / "fresh.mo"), str(CATALOGUE / "benchctl.po")],
                   check=True)
    with (tmp_path / "fresh.mo").open("rb") as fresh, (CATALOGUE / "benchctl.mo").open("rb") as kept:
        assert gettext.GNUTranslations(fresh)._catalog == gettext.GNUTranslations(kept)._catalog  # type: ignore[attr-defined]
