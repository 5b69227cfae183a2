"""/certification/: the published profiles with each threshold in words, and who holds a
certificate."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from django.http import HttpRequest, HttpResponse
from django.shortcuts import render
from django.utils.translation import get_language
from django.utils.translation import gettext as _

from certification.models import Certificate, CertificationProfile
from certification.services.criteria import TIER_ORDER
from contract import link_classes
from web import charts, words
from web.page import (
    figure,
    newest_valid,
    unit_of,
)

COMPARISONS = {"<": "<", "<=": "≤", ">": ">", ">=": "≥"}


def threshold_text(criterion: Mapping[str, Any]) -> str:
    metric = str(criterion.get("metric"))
    threshold = criterion.get("threshold")
    sign = COMPARISONS.get(str(criterion.get("comparison")), str(criterion.get("comparison")))
    if isinstance(threshold, dict) and "link_class" in threshold:
        n = threshold["link_class"]
        return _("%(sign)s %(value)s Gbit/s (what a %(n)s GbE link measures)") % {
            "sign": sign, "value": charts.number(link_classes.floor(float(n))), "n": charts.number(n)}
    if isinstance(threshold, dict):
        factor = charts.number(threshold.get("factor", 0))
        return f"{sign} {factor} × {words.label(str(threshold.get('metric')))}"
    value = figure(float(threshold), metric) if isinstance(threshold, (int, float)) else str(threshold)
    unit = "" if value.endswith("%") else unit_of(metric)  # a ratio is shown in % already
    return f"{sign} {value} {unit}".rstrip()


def profile_view(profile: CertificationProfile) -> dict[str, Any]:
    zh = (get_language() or "").startswith("zh")
    requires = {"gpu": _("needs an NVIDIA GPU"), "multi_node": _("multi-node jobs only")}
    verified = {"reference": _("checked by the platform's reference endpoint"),
                "host": _("reported by the host, behind consistency checks")}
    return {"profile": profile, "description": (profile.description_zh if zh and profile.description_zh
                                                else profile.description),
            "criteria": [{"metric": c.get("metric"), "label": words.label(str(c.get("metric"))),
                          "threshold": threshold_text(c),
                          "why": c.get("why_zh") if zh and c.get("why_zh") else c.get("why", ""),
                          "requires": requires.get(str(c.get("requires")), ""),
                          "verified_by": verified.get(str(c.get("verified_by")), "")}
                         for c in profile.criteria]}


def certified_nodes() -> list[Certificate]:
    """Every node's newest valid certificate, best tier first."""
    return sorted(newest_valid().values(), key=lambda c: (
        TIER_ORDER.index(c.tier) if c.tier in TIER_ORDER else len(TIER_ORDER), c.node.name))



def certification_page(request: HttpRequest) -> HttpResponse:
    """The published certification profiles with their thresholds, and who holds one."""
    profiles = CertificationProfile.objects.order_by("name", "-version")
    return render(request, "web/certification.html", {
        "profiles": [profile_view(p) for p in profiles],
        "certified": certified_nodes(),
    })

