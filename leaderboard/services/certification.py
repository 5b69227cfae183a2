"""Certification: the platform schedules a run with parameters it picks, evaluates the
profile's criteria on what was measured, and issues a signed certificate when every
applicable criterion passes.

Tiers come from the smallest margin over the thresholds among the applicable criteria:

    margin = (value - threshold) / threshold     for >= and >
    margin = (threshold - value) / threshold     for <= and <
    tier   = gold if min margin >= 0.5, silver if >= 0.2, else bronze
"""

from __future__ import annotations

import hashlib
import json
import logging
import operator
import secrets
import statistics
from collections.abc import Callable
from dataclasses import dataclass
from datetime import timedelta
from pathlib import Path
from typing import Any

import yaml
from django.conf import settings
from django.contrib.auth.models import User
from django.db import transaction
from django.utils import timezone

from fleet.models import Node, ReferenceEndpoint
from jobs.models import Run
from jobs.services import submission
from leaderboard.models import Certificate, CertificationProfile, CertificationRequest
from leaderboard.services import reference_log, signing

log = logging.getLogger(__name__)

PROFILES_FILE = Path(__file__).resolve().parents[1] / "certification" / "profiles.yaml"
COMPARISONS: dict[str, Callable[[float, float], bool]] = {
    "<": operator.lt, "<=": operator.le, ">": operator.gt, ">=": operator.ge}
TIERS = [(0.5, "gold"), (0.2, "silver"), (0.0, "bronze")]


class CertificationError(Exception):
    def __init__(self, message: str, status: int = 400) -> None:
        super().__init__(message)
        self.status = status


def load_profiles(path: Path = PROFILES_FILE) -> list[CertificationProfile]:
    """Sync the published profiles file into the database (after every migrate)."""
    data = yaml.safe_load(path.read_text())
    by_name = {p["name"]: p for p in data["profiles"]}
    loaded = []
    for spec in data["profiles"]:
        criteria = list(spec["criteria"])
        parent = spec.get("extends")
        while parent:
            criteria = list(by_name[parent]["criteria"]) + criteria
            parent = by_name[parent].get("extends")
        profile, _ = CertificationProfile.objects.update_or_create(
            name=spec["name"], version=spec["version"],
            defaults={"suite": spec["suite"], "description": spec.get("description", ""),
                      "criteria": criteria})
        loaded.append(profile)
    return loaded


def latest_profile(name: str) -> CertificationProfile:
    profile = CertificationProfile.objects.filter(name=name).order_by("-version").first()
    if profile is None:
        known = sorted(set(CertificationProfile.objects.values_list("name", flat=True)))
        raise CertificationError(f"unknown certification profile {name!r}; known: {known}")
    return profile


def request(node: Node, profile_name: str, user: User,
            peers: list[Node] | None = None) -> CertificationRequest:
    """Schedule a certification run; the platform picks its parameters, not the provider."""
    profile = latest_profile(profile_name)
    peers = peers or []
    multi = any(c.get("requires") == "multi_node" for c in profile.criteria)
    if multi and not peers:
        raise CertificationError(f"{profile.name} measures nodes together: name the peer nodes "
                                 "(`peers`) to run the multi-node job with")
    if any(p.provider_id != node.provider_id for p in peers):
        raise CertificationError("peers must belong to the same provider", 403)
    # A random seed the host cannot know in advance (fio offsets, data, model init).
    params = {"seed": secrets.randbelow(2**31), "training_ranks": 1 if peers else 2}
    with transaction.atomic():
        job, _ = submission.submit(user, [node.pk, *(p.pk for p in peers)], profile.suite,
                                   params, profile=settings.CERTIFICATION_JOB_PROFILE)
        return CertificationRequest.objects.create(node=node, profile=profile, job=job)


@dataclass(frozen=True)
class Outcome:
    metric: str
    comparison: str
    threshold: float | None
    value: float | None
    status: str  # pass, fail, not applicable
    margin: float | None
    why: str
    source: str

    def as_dict(self) -> dict[str, Any]:
        return self.__dict__.copy()


def worst(run: Run, metric: str, higher_is_better: bool) -> float | None:
    values = list(run.samples.filter(metric=metric).values_list("value", flat=True))
    if not values:
        return None
    return min(values) if higher_is_better else max(values)


def reference_check(run: Run, host_value: float) -> tuple[float | None, str]:
    """The reference endpoint's own figure for the node's forward tests, if readable."""
    node = run.node
    since = run.started_at.timestamp() - 5 if run.started_at else 0
    until = (run.finished_at or timezone.now()).timestamp() + 5
    address = node.address or "127.0.0.1"
    for endpoint in ReferenceEndpoint.for_node(node):
        if not endpoint.report_log:
            continue
        figures = reference_log.received_gbps(endpoint.report_log, address, since, until)
        if figures:
            return statistics.median(figures), f"reference endpoint {endpoint.name} (its own iperf3 log)"
    return None, "host report (no reference log with this node's tests)"


def evaluate_criterion(criterion: dict[str, Any], run: Run, multi_node: bool,
                       has_gpu: bool) -> Outcome:
    metric = criterion["metric"]
    comparison = criterion["comparison"]
    higher = comparison in (">", ">=")
    why = criterion.get("why", "")
    requires = criterion.get("requires")
    if (requires == "gpu" and not has_gpu) or (requires == "multi_node" and not multi_node):
        reason = "no NVIDIA GPU on this host" if requires == "gpu" else "single node"
        return Outcome(metric, comparison, None, None, "not applicable", None,
                       f"{why} ({reason})", "")
    threshold_spec = criterion["threshold"]
    if isinstance(threshold_spec, dict):
        base = worst(run, threshold_spec["metric"], True)
        threshold = base * float(threshold_spec["factor"]) if base is not None else None
    else:
        threshold = float(threshold_spec)
    value = worst(run, metric, higher)
    source = "host report"
    if value is None or threshold is None:
        return Outcome(metric, comparison, threshold, value, "fail", None,
                       f"{why} (not measured)", source)
    if criterion.get("verified_by") == "reference":
        reference, source = reference_check(run, value)
        if reference is not None:
            if abs(value - reference) > settings.CERT_REFERENCE_TOLERANCE * reference:
                return Outcome(metric, comparison, threshold, value, "fail", None,
                               f"{why} (host reported {value:.4g}, the reference measured "
                               f"{reference:.4g})", source)
            value = reference
    ok = COMPARISONS[comparison](value, threshold)
    margin = ((value - threshold) if higher else (threshold - value)) / threshold if threshold else None
    return Outcome(metric, comparison, threshold, value, "pass" if ok else "fail",
                   round(margin, 4) if margin is not None else None, why, source)


def tier(outcomes: list[Outcome]) -> str:
    margins = [o.margin for o in outcomes if o.status == "pass" and o.margin is not None]
    smallest = min(margins) if margins else 0.0
    return next(name for floor, name in TIERS if smallest >= floor)


def on_job_finished(job_id: int) -> None:
    """Called when a run of a job finishes; evaluates once every run of it has."""
    cert_request = CertificationRequest.objects.filter(
        job_id=job_id, status=CertificationRequest.Status.RUNNING).first()
    if cert_request is None:
        return
    if cert_request.job.runs.exclude(status__in=Run.FINISHED).exists():
        return
    evaluate(cert_request)


def evaluate(cert_request: CertificationRequest) -> CertificationRequest:
    run = cert_request.job.runs.select_related("node").get(node=cert_request.node)
    if run.status != Run.Status.SUCCEEDED:
        return _failed(cert_request, [], f"the certification run {run.status}: {run.error}")
    multi = cert_request.job.runs.count() > 1
    has_gpu = bool((run.inventory.get("gpu") or {}).get("available"))
    outcomes = [evaluate_criterion(c, run, multi, has_gpu) for c in cert_request.profile.criteria]
    failed = [o for o in outcomes if o.status == "fail"]
    if failed:
        return _failed(cert_request, outcomes, "; ".join(f"{o.metric} {o.value} not {o.comparison} "
                                                         f"{o.threshold}" for o in failed))
    return _issue(cert_request, run, outcomes, tier(outcomes))


def _failed(cert_request: CertificationRequest, outcomes: list[Outcome], reason: str) -> CertificationRequest:
    cert_request.status = CertificationRequest.Status.FAILED
    cert_request.outcome = {"reason": reason, "criteria": [o.as_dict() for o in outcomes]}
    cert_request.save(update_fields=["status", "outcome"])
    # A failed re-run revokes the certificate it was renewing.
    for cert in Certificate.objects.filter(node=cert_request.node, profile=cert_request.profile.name,
                                           revoked_at__isnull=True):
        revoke(cert, f"re-run failed: {reason}"[:255])
    return cert_request


def _issue(cert_request: CertificationRequest, run: Run, outcomes: list[Outcome],
           cert_tier: str) -> CertificationRequest:
    node = cert_request.node
    now = timezone.now()
    inventory_digest = hashlib.sha256(json.dumps(run.inventory, sort_keys=True).encode()).hexdigest()
    document = {
        "type": "gpu-node-certificate", "version": 1,
        "node": {"id": node.pk, "name": node.name, "inventory_sha256": inventory_digest,
                 "gpu_model": node.gpu_model},
        "provider": {"id": node.provider_id, "name": node.provider.name, "kind": node.provider.kind},
        "region": {"code": node.region.code, "province": node.region.province,
                   "city": node.region.city},
        "profile": {"name": cert_request.profile.name, "version": cert_request.profile.version},
        "criteria": [o.as_dict() for o in outcomes],
        "tier": cert_tier,
        "run": run.pk,
        "issued_at": now.isoformat(),
        "expires_at": (now + timedelta(days=settings.CERT_VALID_DAYS)).isoformat(),
        "issuer": {"url": settings.PUBLIC_API_URL, "key_id": signing.key_id()},
    }
    with transaction.atomic():
        cert = Certificate.objects.create(
            node=node, profile=cert_request.profile.name, profile_version=cert_request.profile.version,
            tier=cert_tier, document=document, signature="", issued_at=now,
            expires_at=now + timedelta(days=settings.CERT_VALID_DAYS), run=run)
        document["id"] = cert.pk
        cert.document = document
        cert.signature = signing.sign(document)
        cert.save(update_fields=["document", "signature"])
        # The new certificate replaces the earlier ones of this profile.
        for old in Certificate.objects.filter(node=node, profile=cert.profile,
                                              revoked_at__isnull=True).exclude(pk=cert.pk):
            revoke(old, f"superseded by certificate {cert.pk}")
        cert_request.status = CertificationRequest.Status.CERTIFIED
        cert_request.outcome = {"criteria": [o.as_dict() for o in outcomes], "tier": cert_tier}
        cert_request.certificate = cert
        cert_request.save(update_fields=["status", "outcome", "certificate"])
    return cert_request


def revoke(cert: Certificate, reason: str) -> None:
    Certificate.objects.filter(pk=cert.pk, revoked_at__isnull=True).update(
        revoked_at=timezone.now(), revoked_reason=reason[:255])


def renew_due(user_for: Callable[[Node], User | None]) -> int:
    """Re-run certification for certificates that expire within CERT_RENEW_DAYS_BEFORE."""
    soon = timezone.now() + timedelta(days=settings.CERT_RENEW_DAYS_BEFORE)
    renewed = 0
    for cert in Certificate.objects.filter(revoked_at__isnull=True, expires_at__lte=soon,
                                           expires_at__gt=timezone.now()).select_related("node"):
        pending = CertificationRequest.objects.filter(
            node=cert.node, profile__name=cert.profile, status=CertificationRequest.Status.RUNNING)
        user = user_for(cert.node)
        if pending.exists() or user is None or cert.node.status != Node.Status.ACTIVE:
            continue
        request(cert.node, cert.profile, user)
        renewed += 1
    return renewed
