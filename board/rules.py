"""The board's rule set (board/data/rules.yaml), loaded and checked once."""

from __future__ import annotations

from functools import cache
from pathlib import Path

from contract import rules
from contract.rules import Rule

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
