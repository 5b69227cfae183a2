"""The board's rule set (board/data/rules.yaml), loaded and checked once."""

from __future__ import annotations

from functools import cache
from pathlib import Path

import yaml
from django.utils.translation import get_language

from contract import rules
from contract.rules import Bound, Rule

RULES_FILE = Path(__file__).resolve().parent / "data" / "rules.yaml"
# Not a metric: the worst hour's share of the best hour's median across the platform's
# re-tests (board/stability_board.score_figure), when it has a verdict.
STABILITY = "stability.hour_ratio"


@cache
def diagnosis() -> dict[str, Rule]:
    return rules.load(RULES_FILE, "diagnosis")


@cache
def score() -> dict[str, Rule]:
    return rules.load(RULES_FILE, "score", extra_metrics=[STABILITY])


@cache
def score_core() -> frozenset[str]:
    """The score's parts every node is scored on (``core: true`` in the rule file)."""
    parts = yaml.safe_load(RULES_FILE.read_text())["score"]
    return frozenset(name for name, spec in parts.items() if spec.get("core") is True)


def why(rule: Rule | Bound) -> str:
    """A rule's or a bound's why in the request's language (its file holds both)."""
    return rule.why_zh if (get_language() or "").startswith("zh") else rule.why
