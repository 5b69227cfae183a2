"""Certification issued: the platform schedules a run with parameters it picks, evaluates the
profile's criteria on what was measured, and issues a signed certificate when every
applicable criterion passes. It fails closed:

- a criterion the profile says the platform checks (``verified_by: reference``) takes only
  platform-verified figures (the reference endpoint's own record of the test); without one
  it is ``unverified`` and no certificate is issued;
- the other criteria take measured figures: platform-verified, else what buyers' trial
  agents of the node measured (the median of their last LEADERBOARD_RUNS ranked runs in
  the window); a figure only the host reports is ``claimed``, never certified;
- what only the host can say (GPU model, memory, serial) is marked ``host-claimed``;
- a tier is given only when every criterion was measured; otherwise the certificate says
  which were not ("certified without GPU") and its tier, ``partial``, ranks below bronze;
- a run's evaluation is claimed with a conditional update: two runs finishing together
  issue one certificate.
"""

from __future__ import annotations

import hashlib
import json
import logging
import secrets
import statistics
from collections import defaultdict
from collections.abc import Callable
from datetime import timedelta
from typing import Any

from django.conf import settings
from django.contrib.auth.models import User
from django.db import transaction
from django.db.models import QuerySet
from django.utils import timezone

from certification.models import Certificate, CertificationRequest
from certification.services import signing, webhook_events
from certification.services.criteria import Figure, Figures, Outcome, evaluate_criterion, tier, title
from certification.services.profiles import latest_profile
from config.errors import Conflict, DomainError, Forbidden, Invalid, TooMany
from contract import metrics
from fleet.models import Node
from fleet.services import generation
from jobs.models import Run, Sample
from jobs.services import submission

log = logging.getLogger(__name__)


def request(node: Node, profile_name: str, user: User, peers: list[Node] | None = None,
            renewal: bool = False) -> CertificationRequest:
    """Schedule a certification run; the platform picks its parameters, not the provider.

    A provider's requests are bounded (the platform's renewals are not): one at a time per
    node, and CERTIFICATION_REQUESTS_PER_DAY a day. Each is a platform-requested ranked
    run, so unbounded requests would let a provider fill the board's recent runs with
    runs at its best hour.
    """
    if not renewal:
        _bounded(node)
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


def _bounded(node: Node) -> None:
    open_request = CertificationRequest.objects.filter(node=node, status__in=(
        CertificationRequest.Status.RUNNING, CertificationRequest.Status.EVALUATING)).first()
    if open_request is not None:
        raise Conflict(f"certification request {open_request.pk} of this node is still running: "
                       "wait for its outcome", code="certification_running")
    day_ago = timezone.now() - timedelta(days=1)
    recent = list(CertificationRequest.objects.filter(node=node, created_at__gt=day_ago)
                  .order_by("created_at").values_list("created_at", flat=True))
    if len(recent) >= settings.CERTIFICATION_REQUESTS_PER_DAY:
        wait = (recent[0] + timedelta(days=1) - timezone.now()).total_seconds()
        raise TooMany(f"this node was put up for certification {len(recent)} times in the last "
                      f"24 hours (CERTIFICATION_REQUESTS_PER_DAY); try again later",
                      retry_after=max(1.0, wait))


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
    # A model only declared (a lab host standing for a GPU node) has no GPU to judge.
    gpu = run.inventory.get("gpu") or {}
    has_gpu = bool(gpu.get("available")) and not gpu.get("declared")
    figures = Figures(figures_of(run).figures + trial_figures(cert_request.node))
    outcomes = [evaluate_criterion(c, figures, multi, has_gpu)
                for c in cert_request.profile.criteria]
    failed = [o for o in outcomes if o.status in ("fail", "unverified")]
    if failed:
        return _failed(cert_request, outcomes, "; ".join(
            f"{o.metric} unverified (no reference record)" if o.status == "unverified"
            else f"{o.metric} {o.value} not {o.comparison} {o.threshold}" for o in failed))
    return _issue(cert_request, run, outcomes, tier(outcomes))


def figures_of(run: Run) -> Figures:
    """The run's figures, read once for every criterion."""
    return Figures(Figure(metric, value, evidence == Sample.PLATFORM_VERIFIED, source,
                          evidence in Sample.MEASURED)
                   for metric, value, evidence, source in run.samples.values_list(
                       "metric", "value", "evidence", "evidence_source"))


def trial_figures(node: Node) -> list[Figure]:
    """What buyers' trial agents of the node measured, one figure per metric: the median of
    their last LEADERBOARD_RUNS ranked runs within LEADERBOARD_WINDOW_DAYS, each run at its
    worst peer (as the board reads them)."""
    since = timezone.now() - timedelta(days=settings.LEADERBOARD_WINDOW_DAYS)
    per_run: dict[str, dict[int, list[float]]] = defaultdict(dict)
    for metric, value, run_id in (Sample.objects.filter(
            run__node__trial_of=node, run__ranked=True, run__status=Run.Status.SUCCEEDED,
            run__finished_at__gte=since, evidence__in=Sample.MEASURED)
            .order_by("-run__finished_at", "-run_id").values_list("metric", "value", "run_id")):
        per_run[metric].setdefault(run_id, []).append(value)
    out = []
    for metric, runs in per_run.items():
        known = metrics.METRICS.get(metric)
        pick = min if known is None or known.higher_is_better else max
        values = [pick(v) for v in list(runs.values())[:settings.LEADERBOARD_RUNS]]
        out.append(Figure(metric, statistics.median(values), False,
                          f"buyers' trial agents: median of {len(values)} runs", True))
    return out


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
        "title": title(cert_request.profile.name, outcomes),
        "not_measured": [o.metric for o in outcomes if o.status == "not applicable"],
        # Met only by the host's word: listed, not certified (the tier is partial).
        "claimed": [o.metric for o in outcomes if o.status == "claimed"],
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
        webhook_events.issued(cert)
    return cert_request


def revoke(cert: Certificate, reason: str) -> None:
    _revoke(Certificate.objects.filter(pk=cert.pk), reason)


def revoke_all(node: Node, reason: str) -> int:
    """Every valid certificate of the node revoked, with the reason."""
    return _revoke(Certificate.objects.filter(node=node), reason)


def _revoke(certs: QuerySet[Certificate], reason: str) -> int:
    """Revoke the valid ones of ``certs``; webhooks hear of each, in the same transaction."""
    now, reason = timezone.now(), reason[:255]
    with transaction.atomic():
        revoked = list(certs.filter(revoked_at__isnull=True).select_for_update())
        Certificate.objects.filter(pk__in=[c.pk for c in revoked]).update(
            revoked_at=now, revoked_reason=reason)
        for cert in revoked:
            cert.revoked_at, cert.revoked_reason = now, reason
        if revoked:
            generation.changed()  # the certified board drops the node at once
        webhook_events.revoked(revoked)
    return len(revoked)


def revoke_node(node: Node, reason: str) -> int:
    """A revoked node vouches for nothing: every certificate of it is revoked."""
    return revoke_all(node, f"node revoked: {reason}")


def _peers_of(cert: Certificate) -> list[Node]:
    """The nodes a multi-node certificate was measured with: its run's job's other nodes."""
    if cert.run_id is None:
        return []
    return list(Node.objects.filter(runs__job__runs=cert.run_id, status=Node.Status.ACTIVE)
                .exclude(pk=cert.node_id).distinct())


def renew_due(user_for: Callable[[Node], User | None]) -> int:
    """Re-run certification for certificates that expire within CERT_RENEW_DAYS_BEFORE, and
    tell the webhooks that ask (certificate.expiring, once per certificate)."""
    soon = timezone.now() + timedelta(days=settings.CERT_RENEW_DAYS_BEFORE)
    renewed = 0
    for cert in Certificate.objects.filter(
            revoked_at__isnull=True, expires_at__lte=soon, expires_at__gt=timezone.now(),
    ).select_related("node").order_by("expires_at", "pk"):
        # Told to the webhooks whether or not it can be renewed: a buyer relying on it hears
        # of its end either way.
        webhook_events.expiring(cert)
        pending = CertificationRequest.objects.filter(
            node=cert.node, profile__name=cert.profile, status=CertificationRequest.Status.RUNNING)
        user = user_for(cert.node)
        if pending.exists() or user is None or cert.node.status != Node.Status.ACTIVE:
            continue
        try:
            request(cert.node, cert.profile, user, peers=_peers_of(cert), renewal=True)
        except DomainError as exc:
            # One certificate that cannot be renewed must not stop the others' renewals.
            log.warning("certificate %s of node %s not renewed: %s", cert.pk, cert.node_id, exc)
            continue
        except Exception:  # a fault of this row (a bug, bad data): the others still renew
            log.exception("certificate %s of node %s not renewed", cert.pk, cert.node_id)
            continue
        renewed += 1
    return renewed
