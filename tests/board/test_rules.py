"""The rules are data: the board's diagnosis and score read their thresholds, whys and
sources from board/data/rules.yaml through the one evaluator (contract/rules.py), the one
certification reads its profiles with."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml
from django.utils import translation

from board import diagnosis, rules, score
from certification.services import criteria
from contract import rules as evaluator


@pytest.fixture
def rule_file(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    """A copy of the board's rule file the test may edit; the board reads it instead."""
    copy = tmp_path / "rules.yaml"
    copy.write_text(rules.RULES_FILE.read_text())
    monkeypatch.setattr(rules, "RULES_FILE", copy)
    rules.diagnosis.cache_clear()
    yield copy
    rules.diagnosis.cache_clear()


def edit(path: Path, section: str, name: str, **fields: object) -> None:
    data = yaml.safe_load(path.read_text())
    data[section][name] |= fields
    path.write_text(yaml.safe_dump(data, allow_unicode=True))


def test_a_threshold_changed_in_the_file_changes_the_diagnosis(rule_file: Path) -> None:
    far = {"network.tcp_rtt": 15.0}
    assert [f.code for f in diagnosis.diagnose(far)] == ["high-latency"]
    edit(rule_file, "diagnosis", "high-latency", threshold=20)
    rules.diagnosis.cache_clear()
    assert diagnosis.diagnose(far) == []


@pytest.mark.parametrize(("fields", "message"), [
    ({"why_zh": ""}, "no why_zh"),
    ({"source": None}, "no source"),
    ({"metric": "network.warp_speed"}, "unknown metric"),
    ({"comparison": "=="}, "comparison must be one of"),
    ({"threshold": {"factor": 2}}, "a threshold is a number"),
])
def test_a_rule_without_its_source_or_why_or_with_an_unknown_name_does_not_load(
        rule_file: Path, fields: dict[str, object], message: str) -> None:
    edit(rule_file, "diagnosis", "slow-checkpoints", **fields)
    with pytest.raises(evaluator.RuleError, match=message):
        evaluator.load(rule_file, "diagnosis")


def test_a_finding_names_its_rule_and_says_why_in_the_pages_language() -> None:
    slow = {"storage.checkpoint_write": 0.2}
    with translation.override("en"):
        found = diagnosis.diagnose(slow)[0]
    assert (found.code, found.rule) == ("slow-checkpoints", "diagnosis.slow-checkpoints")
    assert found.why == "checkpoints write at 0.5 GB/s or faster"
    with translation.override("zh-hans"):
        assert diagnosis.diagnose(slow)[0].why == "检查点写入速度不低于 0.5 GB/s"


def test_a_threshold_the_diagnosis_and_the_score_share_is_written_once() -> None:
    found = {**rules.diagnosis(), **{f"score.{k}": v for k, v in rules.score().items()}}
    # The comm share, the GPU busy line and the multi-node link class: one anchor each.
    assert found["communication-bound"].limit() == found["score.comm_share"].limit() == 0.30
    assert found["gpu-busy"].limit() == found["score.gpu_utilisation"].limit() == 80
    assert found["slow-network"].limit() == found["score.bandwidth"].limit() == 9.0
    parts = {p.name: p for p in score.PARTS}
    assert (parts["latency"].target, parts["latency"].higher_is_better) == (5.0, False)


def test_certification_reads_its_thresholds_with_the_same_evaluator() -> None:
    figures = criteria.Figures([criteria.Figure("storage.smallfile_read", 400.0, False, "")])
    for spec in (12.5, {"link_class": 10}, {"metric": "storage.smallfile_read", "factor": 2}):
        assert criteria.threshold_of(spec, figures) == evaluator.threshold(
            spec, {"storage.smallfile_read": 400.0}.get)
    assert criteria.threshold_of({"link_class": 10}, figures) == 9.0


BOUND_FILES = [Path("jobs/data/consistency.yaml"), Path("board/data/stability.yaml"),
               Path("contract/data/gpu_health.yaml"), Path("board/data/verdict.yaml"),
               Path("board/data/score_weights.yaml"), Path("board/data/conditions.yaml"),
               Path("hooks/data/delivery.yaml"), Path("hooks/data/watch.yaml"),
               Path("board/data/disk_faults.yaml")]


@pytest.mark.parametrize("path", BOUND_FILES, ids=lambda p: p.name)
def test_every_bound_file_loads_with_a_why_in_both_languages_and_a_source(path: Path) -> None:
    bounds = evaluator.load_bounds(path)
    assert bounds and all(b.why and b.why_zh and b.source for b in bounds.values())


@pytest.mark.parametrize(("fields", "message"), [
    ({"why_zh": " "}, "no why_zh"),
    ({"source": None}, "no source"),
    ({"value": "1.02"}, "its value is a number"),
    ({"value": True}, "its value is a number"),
])
def test_a_bound_without_its_why_or_source_or_number_does_not_load(
        tmp_path: Path, fields: dict[str, object], message: str) -> None:
    data = yaml.safe_load(BOUND_FILES[0].read_text())
    data["link_slack"] |= fields
    copy = tmp_path / "consistency.yaml"
    copy.write_text(yaml.safe_dump(data, allow_unicode=True))
    with pytest.raises(evaluator.RuleError, match=message):
        evaluator.load_bounds(copy)


def test_the_checks_hold_results_to_the_bounds_in_their_files() -> None:
    from benchmarks import gpu_health
    from board import stability
    from jobs.services import consistency

    files = {p.name: evaluator.load_bounds(p) for p in BOUND_FILES}
    assert consistency.STEP_SLACK == files["consistency.yaml"]["step_slack"].value == 0.85
    assert consistency.LINK_SLACK == files["consistency.yaml"]["link_slack"].value
    assert stability.rules()["hour_ratio"] == files["stability.yaml"]["hour_ratio"].value
    lowered = {"power_limit_w": 280.0, "power_default_limit_w": 300.0}  # 93%
    assert gpu_health.power_limit_lowered(lowered, None) is not None
    assert gpu_health.power_limit_lowered(lowered | {"power_limit_w": 290.0}, None) is None


def test_every_score_part_weighs_what_its_file_says_with_a_why_in_both_languages(
        settings: Any) -> None:
    settings.SCORE_WEIGHTS = {}
    file = evaluator.load_bounds(score.WEIGHTS_FILE)
    assert {p.name for p in score.PARTS} <= set(file)
    assert score.weights() == {name: b.value for name, b in file.items()}
    # A score of equal parts: stability waits until every node has its verdict, and says so.
    assert score.weights()["stability"] == 0 and "same parts" in score.weight_why("stability")
    with translation.override("zh-hans"):
        assert "相同部分" in score.weight_why("stability")
    settings.SCORE_WEIGHTS = {"stability": 2.0}  # an operator's override still wins
    assert score.weights()["stability"] == 2.0
