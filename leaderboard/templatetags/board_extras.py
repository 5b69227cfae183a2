"""Template filters the board's pages need."""

from __future__ import annotations

from typing import Any

from django import template

register = template.Library()


@register.filter
def get_figure(figures: Any, metric: str) -> float | None:
    """A cluster's figure of ``metric`` (ClusterResult.figures), or None."""
    figure = figures.get(metric) if isinstance(figures, dict) else None
    return figure.get("value") if isinstance(figure, dict) else None
