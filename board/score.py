"""The composite "training readiness" score: 0-100, from the metrics that decide how fast
distributed training runs on a node.

Each part scores 0..1 against a target from the field's rules of thumb (1 = at or past the
target), and the score is the weighted mean of the core parts, times 100: the same parts for
every node (#32: a node with GPU or training figures used to collect more parts of its
score than the others, on figures they never had the chance to show). The other parts are
shown against their targets beside it. Weights are data (board/data/score_weights.yaml, each
with its why); an operator overrides one (settings.SCORE_WEIGHTS).

The callers give it measured figures only (platform-verified or buyer-measured: the
evidence ladder), and there is no score until every counted part is measured: a node that
held back a slow part (or has only its host's word for it) must not score on the rest.

    part = min(1, value / target)        when higher is better
    part = min(1, target / value)        when lower is better
    score = 100 * sum(w_i * part_i) / sum(w_i)   over the counted parts, all present
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from functools import cache, cached_property, lru_cache
from pathlib import Path
from types import MappingProxyType

from django.conf import settings
from django.utils.translation import gettext_noop

from board import rules
from board.rules import STABILITY
from contract import rules as bounds
from contract.rules import Rule

__all__ = ["PARTS", "STABILITY", "Part", "Score", "score", "weights"]


@dataclass(frozen=True)
class Part:
    """One part of the score: its rule of board/data/rules.yaml (the metrics, the first one
    present counting; the target and its direction; why, with its source)."""

    name: str
    rule: Rule
    label: str  # marked for translation; the pages translate it when shown
    # Every host has it, GPU or not, one node or many: the score is made of these
    # (board/data/rules.yaml, core: true), and there is none without them.
    core: bool = False

    @property
    def metrics(self) -> tuple[str, ...]:
        return self.rule.metrics

    @cached_property
    def target(self) -> float:
        # Read once: score() asks for it for every part of every row of the board.
        limit = self.rule.limit()
        assert limit is not None, f"score rule {self.name}: a target of its own, not a ratio"
        return limit

    @property
    def higher_is_better(self) -> bool:
        return self.rule.higher_is_better

    @property
    def why(self) -> str:
        return rules.why(self.rule)


# A node's own figures only: its links and clusters are judged on their own boards.
LABELS = {"bandwidth": gettext_noop("Bandwidth"), "latency": gettext_noop("Latency"),
          "busbw": gettext_noop("All-reduce bandwidth"),
          "comm_share": gettext_noop("Communication share"), "iops": gettext_noop("Storage IOPS"),
          "checkpoint": gettext_noop("Checkpoint writes"), "data_loading": gettext_noop("Data loading"),
          "gpu_utilisation": gettext_noop("GPU utilisation"),
          "stability": gettext_noop("Stability over the day")}
PARTS = [Part(name, rule, LABELS[name], name in rules.score_core())
         for name, rule in rules.score().items()]
STABILITY_PART = "stability"

WEIGHTS_FILE = Path(__file__).resolve().parent / "data" / "score_weights.yaml"


@cache
def weight_rules() -> dict[str, bounds.Bound]:
    """Each part's weight, with its why and source (board/data/score_weights.yaml)."""
    loaded = bounds.load_bounds(WEIGHTS_FILE)
    missing = {p.name for p in PARTS} - set(loaded)
    assert not missing, f"{WEIGHTS_FILE.name}: no weight for {sorted(missing)}"
    return loaded


@cache
def default_weights() -> Mapping[str, float]:
    # Read-only: weights() hands this very mapping to every row of the board.
    return MappingProxyType({name: b.value for name, b in weight_rules().items()})


def weight_why(name: str) -> str:
    """Why a part weighs what it does, in the request's language."""
    found = weight_rules().get(name)
    return rules.why(found) if found is not None else ""


def weights() -> Mapping[str, float]:
    overrides = getattr(settings, "SCORE_WEIGHTS", {})
    return {**default_weights(), **overrides} if overrides else default_weights()


@dataclass(frozen=True)
class Score:
    value: float | None  # None: nothing measured, or a core part missing
    # part -> 0..1, None when not measured; read-only: one Score serves every node with
    # the same figures (score() remembers it)
    parts: Mapping[str, float | None]
    missing: tuple[str, ...] = ()  # the counted parts with no measured figure
    counted: tuple[str, ...] = ()  # the parts the value is made of: the same for every node

    def as_dict(self) -> dict[str, object]:
        return {"value": self.value, "parts": dict(self.parts), "missing": list(self.missing),
                "counted": list(self.counted)}


def part_score(part: Part, value: float) -> float:
    if part.higher_is_better:
        return min(1.0, max(0.0, value / part.target)) if part.target > 0 else 1.0
    return 1.0 if value <= 0 else min(1.0, part.target / value)


def counted(w: Mapping[str, float] | None = None) -> tuple[str, ...]:
    """The parts a score is made of, for every node alike: the core parts that are weighted,
    and stability when an operator weights it (then every node needs its verdict)."""
    w = weights() if w is None else w
    return tuple(p.name for p in PARTS
                 if w.get(p.name, 0) > 0 and (p.core or p.name == STABILITY_PART))


def score(values: Mapping[str, float]) -> Score:
    """The score of one node from its latest measured value per metric: the weighted mean
    of the counted parts, only when the node has every one of them; the other parts are
    shown against their targets and counted in none."""
    # Remembered by figures and weights: a board page scores 100 nodes on every request.
    overrides = getattr(settings, "SCORE_WEIGHTS", {})
    return _scored(tuple(sorted(overrides.items())), tuple(sorted(values.items())))


@lru_cache(maxsize=20_000)
def _scored(overrides: tuple[tuple[str, float], ...],
            items: tuple[tuple[str, float], ...]) -> Score:
    w = {**default_weights(), **dict(overrides)}
    values = dict(items)
    parts: dict[str, float | None] = {}
    for part in PARTS:
        metric = next((m for m in part.metrics if m in values), None)
        parts[part.name] = None if metric is None else round(part_score(part, values[metric]), 4)
    made_of = counted(w)
    missing = tuple(name for name in made_of if parts[name] is None)
    weight = sum(w[name] for name in made_of)
    total = sum(w[name] * (parts[name] or 0.0) for name in made_of)
    value = round(100 * total / weight, 1) if weight and not missing else None
    return Score(value, MappingProxyType(parts), missing, made_of)
