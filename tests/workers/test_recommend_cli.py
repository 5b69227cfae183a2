"""benchctl recommend: the verdict as a person reads it, in their language, from the codes
the platform answers with (the scenario of tests/board/test_verdict.py)."""

from __future__ import annotations

import json
from typing import Any

from tests.board.test_verdict import four  # noqa: F401  (the fixture)
from tests.web.test_stability_pages import clock  # noqa: F401  (the fixture)
from tests.workers.test_estimate_cli import benchctl, platform  # noqa: F401  (the fixture)


def test_recommend_names_the_picks_and_the_node_to_avoid_in_both_languages(
        four: dict[str, Any], platform: dict[str, str]) -> None:  # noqa: F811
    done = benchctl("recommend", "--evidence", "any", **platform)
    assert done.returncode == 0, done.stderr
    lines = done.stdout.splitlines()
    assert lines[0] == ("Where to rent gpt2-small (10,000 steps on 2 node(s) with 1 GPU(s) "
                        "each):"), done.stdout
    assert lines[1].startswith("  1. steady (") and lines[3].startswith("  3. shared ("), lines
    assert "at its worst hours (20:00-23:00)" in lines[3]
    avoid = lines.index("Avoid:")
    assert lines[avoid + 1].startswith("  - slow: its link runs at 0.19 Gbit/s, gradient sync "
                                       "would be "), lines
    zh = benchctl("recommend", "--evidence", "any", lang="zh_CN.UTF-8", **platform)
    assert zh.returncode == 0, zh.stderr
    assert "去哪里租" in zh.stdout and "不建议租用：" in zh.stdout
    assert "链路只有 0.19 Gbit/s，梯度同步将占每步时间的" in zh.stdout, zh.stdout
    # The region by its city in Chinese, not its code (#34: "hangzhou" in the Chinese verdict).
    assert "1. steady（" in zh.stdout and "，杭州）" in zh.stdout and "hangzhou" not in zh.stdout
    # For machines: the platform's answer as it is.
    raw = json.loads(benchctl("recommend", "--evidence", "any", "--format", "json",
                              **platform).stdout)
    assert [p["candidate"]["name"] for p in raw["picks"]] == ["steady", "fast", "shared"]


def test_a_bad_flag_is_the_platforms_400_in_words(platform: dict[str, str]) -> None:  # noqa: F811
    done = benchctl("recommend", "--nodes", "0", **platform)
    assert done.returncode != 0 and "HTTP 400" in done.stderr and "nodes" in done.stderr
