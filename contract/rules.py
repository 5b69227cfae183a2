"""Thresholds as data, and the one evaluator every rule set reads them with.

A rule compares a figure with a threshold: a metric (or several: the first one present
counts), a comparison (< <= > >=), a threshold, and why, in both languages, with its
source. A threshold is one of:

    a number                  as written, in the metric's unit
    {link_class: N}           what an honest N GbE link measures (contract/link_classes.py)
    {metric: M, factor: F}    F times another figure of the same node or run

The rule sets: the board's diagnosis and score targets (board/data/rules.yaml) and the
certification profiles' criteria (certification/profiles.yaml). A file that names an
unknown metric or comparison, or a rule without its source or its why in either language,
fails when it is loaded, not when a node is judged by it.

A bound is the other kind of threshold: a number a check is held to that is not a figure's
target (a tolerance between two timings, a slack over a line rate, a count of re-tests),
with its why in both languages and its source, as a rule. The bound files: the intake's
consistency checks (jobs/data/consistency.yaml), the stability verdicts
(board/data/stability.yaml) and the GPU board's health (contract/data/gpu_health.yaml).
"""

from __future__ import annotations

import operator
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from functools import cached_property
from pathlib import Path
from typing import Any

import yaml

from contract import link_classes, metrics

COMPARISONS: dict[str, Callable[[float, float], bool]] = {
    "<": operator.lt, "<=": operator.le, ">": operator.gt, ">=": operator.ge}


class RuleError(ValueError):
    """A rule file that cannot be applied as written."""


@dataclass(frozen=True)
class Rule:
    name: str
    metrics: tuple[str, ...]  # the first one present is judged
    comparison: str
    threshold: Any  # as written: a number, {link_class} or {metric, factor}
    why: str
    why_zh: str
    source: str

    @property
    def higher_is_better(self) -> bool:
        """What the rule asks for: a figure above its threshold (> >=) or below it."""
        return self.comparison in (">", ">=")

    def value(self, figures: Mapping[str, float]) -> float | None:
        return next((figures[m] for m in self.metrics if m in figures), None)

    def limit(self, figures: Mapping[str, float] | None = None) -> float | None:
        return threshold(self.threshold, (figures or {}).get)

    def holds(self, figures: Mapping[str, float]) -> bool | None:
        """True or False when the figures can be judged by it, None when they cannot."""
        value, limit = self.value(figures), self.limit(figures)
        if value is None or limit is None:
            return None
        return COMPARISONS[self.comparison](value, limit)


@dataclass(frozen=True)
class Bound:
    name: str
    value: float
    why: str
    why_zh: str
    source: str


def threshold(spec: Any, figure: Callable[[str], float | None]) -> float | None:
    """A threshold's number; ``figure`` gives the other figure a {metric, factor} names."""
    if isinstance(spec, dict) and "link_class" in spec:
        return link_classes.floor(float(spec["link_class"]))
    if isinstance(spec, dict):
        base = figure(str(spec["metric"]))
        return base * float(spec["factor"]) if base is not None else None
    return float(spec)


def check_threshold(spec: Any, where: str) -> None:
    if isinstance(spec, dict):
        if "link_class" in spec or ({"metric", "factor"} <= set(spec)
                                    and spec["metric"] in metrics.METRICS):
            return
    elif isinstance(spec, (int, float)) and not isinstance(spec, bool):
        return
    raise RuleError(f"{where}: a threshold is a number, {{link_class}} or {{metric, factor}} "
                    "of a known metric")


def rule(name: str, spec: Mapping[str, Any], extra_metrics: Iterable[str] = ()) -> Rule:
    """One rule from its file's entry, checked. ``extra_metrics``: names the rule set
    knows besides the metric table (the score's stability figure)."""
    where = f"rule {name!r}"
    known = set(metrics.METRICS) | set(extra_metrics)
    names = spec.get("metrics") or [spec.get("metric")]
    if not isinstance(names, Sequence) or not names or any(m not in known for m in names):
        raise RuleError(f"{where}: unknown metric {names!r}")
    if spec.get("comparison") not in COMPARISONS:
        raise RuleError(f"{where}: comparison must be one of {sorted(COMPARISONS)}")
    check_threshold(spec.get("threshold"), where)
    return Rule(name, tuple(names), spec["comparison"], spec["threshold"],
                *_explained(spec, where))


def load(path: Path, section: str, extra_metrics: Iterable[str] = ()) -> dict[str, Rule]:
    """A rule file's section, every rule checked before any is used."""
    data = yaml.safe_load(path.read_text())
    entries = data.get(section) if isinstance(data, dict) else None
    if not isinstance(entries, dict) or not entries:
        raise RuleError(f"{path}: no {section!r} rules")
    extra = list(extra_metrics)
    return {name: rule(name, spec, extra) for name, spec in entries.items()}


def _explained(spec: Mapping[str, Any], where: str) -> tuple[str, str, str]:
    for field in ("why", "why_zh", "source"):
        if not isinstance(spec.get(field), str) or not spec[field].strip():
            raise RuleError(f"{where}: no {field} (every rule says why, in both languages, "
                            "and where its threshold comes from)")
    return spec["why"].strip(), spec["why_zh"].strip(), spec["source"].strip()


def load_bounds(path: Path) -> dict[str, Bound]:
    """A bound file, every bound checked before any is used: a number, why, why_zh, source."""
    data = yaml.safe_load(path.read_text())
    if not isinstance(data, dict) or not data:
        raise RuleError(f"{path}: no bounds")
    bounds = {}
    for name, spec in data.items():
        where = f"{path.name}: bound {name!r}"
        value = spec.get("value") if isinstance(spec, dict) else None
        if not isinstance(value, (int, float)) or isinstance(value, bool):
            raise RuleError(f"{where}: its value is a number")
        bounds[name] = Bound(name, float(value), *_explained(spec, where))
    return bounds


class BoundFile:
    """A bound file, read and checked once, when first asked: its bounds by name, and their
    numbers (what a check compares with)."""

    def __init__(self, path: Path) -> None:
        self.path = path

    @cached_property
    def bounds(self) -> dict[str, Bound]:
        return load_bounds(self.path)

    @cached_property
    def numbers(self) -> dict[str, float]:
        return {name: b.value for name, b in self.bounds.items()}
