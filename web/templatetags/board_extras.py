"""Template filters the board's pages need: a cluster's figure, and the platform's own names
in the page's language (web.words)."""

from __future__ import annotations

from typing import Any

from django import template
from django.urls import translate_url
from django.utils.html import format_html

from web import page, words

register = template.Library()


@register.filter
def get_figure(figures: Any, metric: str) -> float | None:
    """A cluster's figure of ``metric`` (ClusterResult.figures), or None."""
    figure = figures.get(metric) if isinstance(figures, dict) else None
    return figure.get("value") if isinstance(figure, dict) else None


@register.filter
def figure(value: Any, metric: str = "") -> str:
    """A number as the tables show it (thousands separated, no exponent; ratios in %)."""
    return page.figure(float(value), metric) if isinstance(value, (int, float)) else "–"


@register.filter
def evidence_badge(grade: str) -> str:
    """An evidence grade as its badge: a filter, not an included template, as the board
    shows one a row (200 includes were a tenth of the page's time, #35)."""
    css, name = words.badge(grade)
    return format_html('<span class="badge {}">{}</span>', css, name)


@register.filter
def region_of(node: Any) -> str:
    return words.region(node.region.province, node.region.city)


register.filter("place", words.place)
register.filter("kind", words.kind)
register.filter("tier", words.tier)
register.filter("state", words.state)
register.filter("requester", words.requester)
register.filter("evidence_why", words.evidence)
register.filter("profile_name", words.profile)
register.filter("certification_profile", words.certification_profile)
register.filter("suite_name", words.suite)
register.filter("label", page.label_of)
register.filter("about", words.about)
register.filter("unit", page.unit_of)


@register.simple_tag(takes_context=True)
def switch_url(context: Any, language: str) -> str:
    """This page in another language: its /zh-hans/ or /en/ URL (an unprefixed page stays
    unprefixed; the language switch's cookie then decides)."""
    return translate_url(context["request"].get_full_path(), language)
