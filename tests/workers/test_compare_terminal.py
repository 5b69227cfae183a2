"""benchctl compare as a person sees it: on a 100-column terminal (tmux), in Chinese and in
English, the table fits, names the metrics in the reader's language and cuts no word."""

from __future__ import annotations

import re
import shutil
import subprocess
import sys
import uuid
from typing import Any

import pytest

from contract import areas, metrics
from lab.procs import REPO
from tests.fixtures import measured
from workers import i18n
from workers.buyer import columns, display

pytestmark = [pytest.mark.slow,
              pytest.mark.skipif(shutil.which("tmux") is None, reason="needs tmux (make tools)")]

WIDTH = 100
NAMES = ["hangzhou-west-lake-gpu-07", "ningbo-port-a100-02", "shenzhen-nanshan-h800-11"]
EXTRA = {"network.tcp_throughput_parallel": 8.5, "network.tcp_rtt": 4.2,
         "storage.packedfile_read": 47240.3, "storage.randread_clat_p999_tmpfs": 812.5,
         "training.dataloader_samples_per_s": 12000.0, "gpu.matmul_tflops_fp32": 1.25}
LATIN_WORD = re.compile(r"[A-Za-z][\w.'’,:%/+=-]*")


def on_tmux(command: list[str], env: dict[str, str]) -> str:
    """``command`` in a detached 100-column tmux session; the pane's lines, wrapped lines
    joined back (a line wider than the pane shows as one line wider than 100)."""
    socket, done = f"bench-{uuid.uuid4().hex[:8]}", f"done-{uuid.uuid4().hex[:8]}"
    shell = " ".join(["env", "-u", "COLUMNS", "-u", "LINES", "-u", "LANGUAGE", "-u", "LC_MESSAGES",
                      *(f"{k}={v}" for k, v in env.items()), *command])
    tmux = ["tmux", "-u", "-L", socket, "-f", "/dev/null"]
    try:
        subprocess.run([*tmux, "new-session", "-d", "-x", str(WIDTH), "-y", "50", "-c", str(REPO),
                        f"{shell}; tmux -L {socket} wait-for -S {done}; sleep 60"], check=True)
        subprocess.run([*tmux, "wait-for", done], check=True, timeout=30)
        return subprocess.run([*tmux, "capture-pane", "-p", "-J", "-S", "-"], check=True,
                              capture_output=True, text=True).stdout
    finally:
        subprocess.run([*tmux, "kill-server"], check=False, capture_output=True)


def vocabulary(language: str) -> set[str]:
    """Every Latin word benchctl may show in compare's table: in the labels, areas, units,
    headers and node names."""
    i18n.activate(language)
    try:
        texts = [*(i18n._(m.label) for m in metrics.METRICS.values()),
                 *(i18n._(label) for _key, label, _test in areas.AREAS),
                 *(i18n._(w) for w in metrics.UNIT_WORDS.values()),
                 *(m.unit for m in metrics.METRICS.values()), *display.headers().values(),
                 i18n._("side by side"), i18n._("tie"), i18n._("score"), "0-100", *NAMES]
    finally:
        i18n.activate(i18n.ENGLISH)
    return {w for text in texts for w in LATIN_WORD.findall(text)}


@pytest.mark.parametrize("lang", ["zh_CN.UTF-8", "C.UTF-8"])
def test_compare_fits_100_columns_in_the_readers_language(
        lang: str, live_server: Any, buyer: Any, enrol_node: Any) -> None:
    nodes = [enrol_node(name) for name in NAMES]
    for i, node in enumerate(nodes):
        measured(buyer, node, 7.0 + i, extra={k: v * (1 + i / 20) for k, v in EXTRA.items()})
    env = {"LANG": lang, "LC_ALL": lang, "BENCH_URL": live_server.url, "BENCH_TOKEN": buyer.token,
           "PYTHONPATH": str(REPO)}
    shown = on_tmux([sys.executable, "-m", "workers.cli", "compare",
                     *(str(n.node.pk) for n in nodes)], env)
    lines = shown.splitlines()
    assert max(columns.width(line) for line in lines) <= WIDTH, shown
    for name in NAMES:
        assert name in shown, shown  # whole, at least in its header
    chinese = lang.startswith("zh")
    assert ("节点对比" if chinese else "side by side") in shown, shown
    if chinese:
        assert "network." not in shown and "storage." not in shown, shown
        assert "网络" in shown and "存储" in shown and "数据加载" in shown
    else:
        assert "Network" in shown and "Data loading" in shown
    words = vocabulary(i18n.CHINESE if chinese else i18n.ENGLISH)
    cut = {w for w in LATIN_WORD.findall(shown) if w.rstrip(",.:") not in words and w not in words}
    assert not cut, f"words cut or unknown: {sorted(cut)}\n{shown}"
