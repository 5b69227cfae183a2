"""Certification profiles: the published file (certification/profiles.yaml) checked and
synced into the database, so that a profile that names an unknown metric, comparison or
requirement fails at migrate time, not when a provider's node is judged by it."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import yaml
from django.db import transaction

from certification.models import CertificationProfile
from config.errors import Invalid
from contract import metrics, rules
from contract.rules import COMPARISONS
from contract.suites import SUITES

PROFILES_FILE = Path(__file__).resolve().parents[1] / "profiles.yaml"
REQUIREMENTS = {None, "gpu", "multi_node"}
VERIFIERS = {"reference", "host"}


class ProfileError(ValueError):
    """A published profile that cannot be applied as written."""


def check_criterion(profile: str, criterion: dict[str, Any]) -> None:
    where = f"profile {profile!r}, criterion {criterion.get('metric')!r}"
    if criterion.get("metric") not in metrics.METRICS:
        raise ProfileError(f"{where}: unknown metric")
    if criterion.get("comparison") not in COMPARISONS:
        raise ProfileError(f"{where}: comparison must be one of {sorted(COMPARISONS)}")
    if criterion.get("requires") not in REQUIREMENTS:
        raise ProfileError(f"{where}: requires must be gpu or multi_node")
    if criterion.get("verified_by", "host") not in VERIFIERS:
        raise ProfileError(f"{where}: verified_by must be reference or host")
    try:
        rules.check_threshold(criterion.get("threshold"), where)
    except rules.RuleError as exc:
        raise ProfileError(str(exc)) from None


def load_profiles(path: Path = PROFILES_FILE) -> list[CertificationProfile]:
    """Sync the published profiles file into the database (after every migrate)."""
    data = yaml.safe_load(path.read_text())
    by_name = {p["name"]: p for p in data["profiles"]}
    loaded = []
    # Every profile is checked before any is written: a bad file changes nothing.
    for spec in data["profiles"]:
        if spec.get("suite") not in SUITES:
            raise ProfileError(f"profile {spec.get('name')!r}: unknown suite {spec.get('suite')!r}")
        if spec.get("extends") and spec["extends"] not in by_name:
            raise ProfileError(f"profile {spec['name']!r} extends unknown {spec['extends']!r}")
        for criterion in spec["criteria"]:
            check_criterion(spec["name"], criterion)
    with transaction.atomic():
        for spec in data["profiles"]:
            criteria = list(spec["criteria"])
            parent = spec.get("extends")
            while parent:
                criteria = list(by_name[parent]["criteria"]) + criteria
                parent = by_name[parent].get("extends")
            profile, _ = CertificationProfile.objects.update_or_create(
                name=spec["name"], version=spec["version"],
                defaults={"suite": spec["suite"], "description": spec.get("description", ""),
                          "description_zh": spec.get("description_zh", ""),
                          "criteria": criteria})
            loaded.append(profile)
    return loaded


def latest_profile(name: str) -> CertificationProfile:
    profile = CertificationProfile.objects.filter(name=name).order_by("-version").first()
    if profile is None:
        known = sorted(set(CertificationProfile.objects.values_list("name", flat=True)))
        raise Invalid(f"unknown certification profile {name!r}; known: {known}")
    return profile
