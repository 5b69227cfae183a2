"""Certification: the platform schedules a run with parameters it picks, evaluates the
profile's criteria on what was measured, and issues a signed certificate when every
applicable criterion passes. It fails closed:

- a criterion the profile says the platform checks (``verified_by: reference``) takes only
  platform-verified figures (the reference endpoint's own record of the test); without one
  it is ``unverified`` and no certificate is issued;
- what only the host can say (GPU model, memory, serial) is marked ``host-claimed``;
- a tier is given only when every criterion was measured; otherwise the certificate says
  which were not ("certified without GPU") and its tier, ``partial``, ranks below bronze;
- a run's evaluation is claimed with a conditional update: two runs finishing together
  issue one certificate.

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

from certification.models import Certificate, CertificationProfile, CertificationRequest
from certification.services import signing
from config.errors import Forbidden, Invalid
from contract import link_classes
from fleet.models import Node
from jobs.models import Run, Sample
from jobs.services import submission

log = logging.getLogger(__name__)

PROFILES_FILE = Path(__file__).resolve().parents[1] / "profiles.yaml"
COMPARISONS: dict[str, Callable[[float, float], bool]] = {
    "<": operator.lt, "<=": operator.le, ">": operator.gt, ">=": operator.ge}
TIERS = [(0.5, "gold"), (0.2, "silver"), (0.0, "bronze")]
# Given when a criterion could not be measured here (no GPU): below every full tier.
PARTIAL_TIER = "partial"
TIER_ORDER = ["gold", "silver", "bronze", PARTIAL_TIER]


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
        raise Invalid(f"unknown certification profile {name!r}; known: {known}")
    return profile


def request(node: Node, profile_name: str, user: User,
            peers: list[Node] | None = None) -> CertificationRequest:
    """Schedule a certification run; the platform picks its parameters, not the provider."""
    profile = latest_profile(profile_name)
    peers = peers or []
    multi = any(c.get("requires") == "multi_node" for c in profile.criteria)
    if multi and not peers:
        raise Invalid(f"{profile.name} measures nodes together: name the peer nodes "
                      "(`peers`) to run the multi-node job with")
    if any(p.provider_id != node.provider_id for p in peers):
        raise Forbidden("peers must belong to the same provider")
    # A random seed the host cannot know in advance (fio offsets, data, model init).
    params = {"seed": secrets.randbelow(2**31), "training_ranks": 1 if peers else 2}
    with transaction.atomic():
        job, _ = submission.submit(user, [node.pk, *(p.pk for p in peers)], profile.suite,
                                   params, profile=settings.CERTIFICATION_JOB_PROFILE,
                                   by_platform=True)
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


def worst_sample(run: Run, metric: str, higher_is_better: bool,
                 verified: bool = False) -> tuple[float, str] | None:
    """The run's worst figure of the metric (across peers) and its evidence source."""
    samples = run.samples.filter(metric=metric)
    if verified:
        samples = samples.filter(evidence=Sample.PLATFORM_VERIFIED)
    rows = list(samples.values_list("value", "evidence_source"))
    if not rows:
        return None
    return (min if higher_is_better else max)(rows, key=lambda row: row[0])


def worst(run: Run, metric: str, higher_is_better: bool) -> float | None:
    found = worst_sample(run, metric, higher_is_better)
    return found[0] if found else None


def threshold_of(spec: Any, run: Run) -> float | None:
    """A number; {link_class: N}: what an honest N GbE link measures; {metric, factor}."""
    if isinstance(spec, dict) and "link_class" in spec:
        return link_classes.floor(float(spec["link_class"]))
    if isinstance(spec, dict):
        base = worst(run, spec["metric"], True)
        return base * float(spec["factor"]) if base is not None else None
    return float(spec)


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
    threshold = threshold_of(criterion["threshold"], run)
    by_reference = criterion.get("verified_by") == "reference"
    found = worst_sample(run, metric, higher, verified=by_reference)
    value = found[0] if found else None
    if by_reference:
        if found is None:
            host = worst(run, metric, higher)
            return Outcome(metric, comparison, threshold, host, "unverified", None,
                           f"{why} (no reference endpoint recorded this node's tests: the "
                           "platform cannot vouch for the host's figure)", "host report")
        source = found[1]
    else:
        source = "host report"
    if value is None or threshold is None:
        return Outcome(metric, comparison, threshold, value, "fail", None,
                       f"{why} (not measured)", source)
    ok = COMPARISONS[comparison](value, threshold)
    margin = ((value - threshold) if higher else (threshold - value)) / threshold if threshold else None
    return Outcome(metric, comparison, threshold, value, "pass" if ok else "fail",
                   round(margin, 4) if margin is not None else None, why, source)


def tier(outcomes: list[Outcome]) -> str:
    if any(o.status == "not applicable" for o in outcomes):
        return PARTIAL_TIER  # not everything was measured: no medal for what was skipped
    margins = [o.margin for o in outcomes if o.status == "pass" and o.margin is not None]
    smallest = min(margins) if margins else 0.0
    return next(name for floor, name in TIERS if smallest >= floor)


def title(profile: CertificationProfile, outcomes: list[Outcome]) -> str:
    missing = [o for o in outcomes if o.status == "not applicable"]
    if not missing:
        return f"certified: {profile.name}"
    if all("GPU" in o.why for o in missing):
        return f"certified without GPU: {profile.name}"
    return f"certified without {', '.join(o.metric for o in missing)}: {profile.name}"


def on_job_finished(job_id: int) -> None:
    """Called when a run of a job finishes; evaluates once every run of it has."""
    cert_request = CertificationRequest.objects.filter(
        job_id=job_id, status=CertificationRequest.Status.RUNNING).first()
    if cert_request is None:
        return
    if cert_request.job.runs.exclude(status__in=Run.FINISHED).exists():
        return
    # Claim the evaluation: of two runs finishing together, exactly one gets the row.
    claimed = CertificationRequest.objects.filter(
        pk=cert_request.pk, status=CertificationRequest.Status.RUNNING).update(
        status=CertificationRequest.Status.EVALUATING)
    if claimed != 1:
        return
    evaluate(cert_request)


def evaluate(cert_request: CertificationRequest) -> CertificationRequest:
    run = cert_request.job.runs.select_related("node").get(node=cert_request.node)
    if run.status != Run.Status.SUCCEEDED:
        return _failed(cert_request, [], f"the certification run {run.status}: {run.error}")
    multi = cert_request.job.runs.count() > 1
    # Presence and model are the host's claim (NVML on its side); marked so in the document.
    has_gpu = bool((run.inventory.get("gpu") or {}).get("available"))
    outcomes = [evaluate_criterion(c, run, multi, has_gpu) for c in cert_request.profile.criteria]
    failed = [o for o in outcomes if o.status in ("fail", "unverified")]
    if failed:
        return _failed(cert_request, outcomes, "; ".join(
            f"{o.metric} unverified (no reference record)" if o.status == "unverified"
            else f"{o.metric} {o.value} not {o.comparison} {o.threshold}" for o in failed))
    return _issue(cert_request, run, outcomes, tier(outcomes))


def host_claimed_gpu(inventory: dict[str, Any]) -> dict[str, Any]:
    """What the host says of its GPUs: model, memory, serial, all marked host-claimed."""
    gpu = inventory.get("gpu") if isinstance(inventory.get("gpu"), dict) else {}
    devices = [d for d in (gpu or {}).get("devices") or [] if isinstance(d, dict)]
    return {"evidence": "host-claimed", "available": bool((gpu or {}).get("available")),
            "devices": [{k: d.get(k) for k in ("name", "memory_total_mib", "serial", "uuid")
                         if k in d} for d in devices]}


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
                 "gpu_model": node.gpu_model, "gpu_model_evidence": "host-claimed",
                 "gpu": host_claimed_gpu(run.inventory)},
        "provider": {"id": node.provider_id, "name": node.provider.name, "kind": node.provider.kind},
        "region": {"code": node.region.code, "province": node.region.province,
                   "city": node.region.city},
        "profile": {"name": cert_request.profile.name, "version": cert_request.profile.version},
        "criteria": [o.as_dict() for o in outcomes],
        "title": title(cert_request.profile, outcomes),
        "not_measured": [o.metric for o in outcomes if o.status == "not applicable"],
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


def revoke_node(node: Node, reason: str) -> int:
    """A revoked node vouches for nothing: every certificate of it is revoked."""
    return Certificate.objects.filter(node=node, revoked_at__isnull=True).update(
        revoked_at=timezone.now(), revoked_reason=f"node revoked: {reason}"[:255])


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
