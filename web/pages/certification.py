"""/certification/: the published profiles with each threshold in words, and who holds a
certificate."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from django.http import HttpRequest, HttpResponse
from django.shortcuts import render
from django.utils.translation import get_language
from django.utils.translation import gettext as _

from board.score import PARTS
from certification.models import CertificationProfile
from certification.services import signing
from certification.services.criteria import TIER_ORDER, TIERS
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


def score_target(metric: str) -> str:
    """The board score's target for the metric (full points there), or "" when the score has
    no part for it: a different figure from a certificate's threshold, and labelled so."""
    part = next((p for p in PARTS if metric in p.metrics), None)
    if part is None:
        return ""
    return threshold_text({"metric": metric, "comparison": part.rule.comparison,
                           "threshold": part.rule.threshold})


def tiers() -> list[dict[str, str]]:
    """Every tier a certificate can carry, with what earns it (criteria.TIERS' floors)."""
    floors = dict((name, floor) for floor, name in TIERS)
    pct = {name: charts.number(100 * floor) for name, floor in floors.items()}
    return [
        {"tier": "gold", "means": _("every criterion measured and met, the smallest margin over "
                                    "its threshold %(pct)s%% or more") % {"pct": pct["gold"]}},
        {"tier": "silver", "means": _("every criterion measured and met, the smallest margin "
                                      "%(pct)s%% or more") % {"pct": pct["silver"]}},
        {"tier": "bronze", "means": _("every criterion measured and met, one of them by less "
                                      "than %(pct)s%%") % {"pct": pct["silver"]}},
        {"tier": "partial", "means": _(
            "every criterion that could be judged is met, but not all could: one does not apply "
            "to the host (a GPU criterion on a host without an NVIDIA GPU) or stands only on the "
            "host's own report. No medal for what was skipped or only claimed; the certificate "
            "lists which criteria those are.")},
    ]


def profile_view(profile: CertificationProfile) -> dict[str, Any]:
    zh = (get_language() or "").startswith("zh")
    requires = {"gpu": _("needs an NVIDIA GPU"), "multi_node": _("multi-node jobs only")}
    verified = {"reference": _("checked by the platform's reference endpoint"),
                "host": _("reported by the host, behind consistency checks")}
    return {"profile": profile, "description": (profile.description_zh if zh and profile.description_zh
                                                else profile.description),
            "criteria": [{"metric": c.get("metric"), "label": words.label(str(c.get("metric"))),
                          "threshold": threshold_text(c),
                          "score_target": score_target(str(c.get("metric"))),
                          "why": c.get("why_zh") if zh and c.get("why_zh") else c.get("why", ""),
                          "requires": requires.get(str(c.get("requires")), ""),
                          "verified_by": verified.get(str(c.get("verified_by")), "")}
                         for c in profile.criteria]}


def certified_nodes() -> list[dict[str, Any]]:
    """Every node's newest valid certificate, best tier first; one under a lab's unpublished
    profile says so (its criteria are not the published ones)."""
    unpublished = set(CertificationProfile.objects.filter(published=False)
                      .values_list("name", "version"))
    certificates = sorted(newest_valid().values(), key=lambda c: (
        TIER_ORDER.index(c.tier) if c.tier in TIER_ORDER else len(TIER_ORDER), c.node.name))
    return [{"certificate": c, "unpublished": (c.profile, c.profile_version) in unpublished}
            for c in certificates]


def certification_page(request: HttpRequest) -> HttpResponse:
    """The published certification profiles with their thresholds and the board's score
    targets apart, every tier, the signing key's fingerprint, and who holds a certificate."""
    profiles = CertificationProfile.objects.filter(published=True).order_by("name", "-version")
    return render(request, "web/certification.html", {
        "profiles": [profile_view(p) for p in profiles],
        "tiers": tiers(),
        "key": {"id": signing.key_id(), "fingerprint": signing.fingerprint(),
                "site": request.build_absolute_uri("/").rstrip("/")},
        "certified": certified_nodes(),
    })

