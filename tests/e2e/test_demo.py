"""`make demo` keeps working: the whole stack, two enrolled nodes, a benchmark, a table."""

from __future__ import annotations

import os
import re
import subprocess
import sys

import pytest

from tests.lab.procs import REPO

pytestmark = pytest.mark.slow


def test_the_demo_benchmarks_two_regions_and_prints_the_comparison() -> None:
    env = {k: v for k, v in os.environ.items() if k != "DATABASE_URL"}
    done = subprocess.run([sys.executable, "-m", "tests.lab.demo", "--no-wait"], cwd=REPO,
                          env=env, capture_output=True, text=True, timeout=240, check=False)
    out = done.stdout
    assert done.returncode == 0, out + done.stderr
    rows = {m[0]: float(m[1]) for m in re.findall(
        r"^(hz-a100-01|sz-a100-01)\s.*?\s([\d.]+)\s+[\d.]+\s+[\d.]+$", out, re.M)}
    assert set(rows) == {"hz-a100-01", "sz-a100-01"}, out
    assert "Zhejiang/Hangzhou" in out and "Guangdong/Shenzhen" in out
    assert "stopped" in out
