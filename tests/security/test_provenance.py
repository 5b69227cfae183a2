"""Provenance a provider cannot buy: the platform's jobs are the platform's, certification
requests are bounded per node, and a renewal that stops revokes what it renewed. Real
parts: the API over the Django test client, PostgreSQL, the on-commit signals."""

from __future__ import annotations

from datetime import timedelta
from pathlib import Path
from typing import Any

import pytest
from django.utils import timezone

from certification.models import Certificate, CertificationRequest
from certification.services import issuing, signing
from jobs.models import Run
from jobs.services import lifecycle, submission


@pytest.fixture(autouse=True)
def signing_key(tmp_path: Path, settings: Any) -> None:
    settings.CERT_SIGNING_KEY_FILE = str(tmp_path / "key.pem")
    settings.CERTIFICATION_JOB_PROFILE = "quick"
    signing.private_key.cache_clear()


def ask(provider_owner: Any, node: Any, profile: str = "single-node-training") -> Any:
    return provider_owner.client().post(f"/api/v1/nodes/{node.node.pk}/certifications",
                                        {"profile": profile}, format="json")


def certificate(node: Any, days_left: int = 3) -> Certificate:
    """A certificate of the node that is due for renewal."""
    now = timezone.now()
    return Certificate.objects.create(node=node.node, profile="single-node-training", tier="gold",
                                      document={}, signature="", issued_at=now - timedelta(days=27),
                                      expires_at=now + timedelta(days=days_left))


def test_a_provider_cannot_cancel_its_nodes_certification_job(
        provider_owner: Any, enrol_node: Any) -> None:
    node = enrol_node("hz-1")
    cert_request = CertificationRequest.objects.get(pk=ask(provider_owner, node).json()["id"])
    # The job's owner is the provider's user: on main, its cancel stopped a renewal going badly.
    response = provider_owner.client().post(f"/api/v1/benchmarks/{cert_request.job_id}/cancel")
    assert response.status_code == 403
    assert "only the platform can cancel it" in response.json()["detail"]
    assert cert_request.job.runs.get().status == Run.Status.QUEUED


def test_a_certification_run_that_stops_fails_the_request_and_revokes_the_old_certificate(
        provider_owner: Any, enrol_node: Any, django_capture_on_commit_callbacks: Any) -> None:
    node = enrol_node("hz-1")
    old = certificate(node)
    with django_capture_on_commit_callbacks(execute=True):
        assert issuing.renew_due(lambda n: provider_owner.user) == 1
    cert_request = CertificationRequest.objects.get(node=node.node)
    # The platform cancels it (or the sweeper gives up): job_finished is sent either way.
    with django_capture_on_commit_callbacks(execute=True):
        assert lifecycle.cancel(cert_request.job, by_platform=True) == 1
    cert_request.refresh_from_db()
    old.refresh_from_db()
    assert cert_request.status == "failed" and "cancelled" in cert_request.outcome["reason"]
    assert old.revoked_at is not None and old.revoked_reason.startswith("re-run failed")


def test_a_node_whose_host_stops_renewing_its_lease_fails_its_certification(
        provider_owner: Any, enrol_node: Any, django_capture_on_commit_callbacks: Any) -> None:
    node = enrol_node("hz-1")
    cert_request = CertificationRequest.objects.get(pk=ask(provider_owner, node).json()["id"])
    with django_capture_on_commit_callbacks(execute=True):
        assert lifecycle.fail_open_runs(node.node, "node revoked by its provider") == 1
    cert_request.refresh_from_db()
    assert cert_request.status == "failed" and "node revoked" in cert_request.outcome["reason"]


def test_certification_requests_are_one_at_a_time_and_a_few_a_day_per_node(
        provider_owner: Any, enrol_node: Any, settings: Any) -> None:
    settings.CERTIFICATION_REQUESTS_PER_DAY = 2
    node = enrol_node("hz-1")
    first = ask(provider_owner, node)
    assert first.status_code == 202
    again = ask(provider_owner, node)
    assert again.status_code == 409 and "still running" in again.json()["detail"]
    CertificationRequest.objects.filter(pk=first.json()["id"]).update(status="failed")
    second = ask(provider_owner, node)
    assert second.status_code == 202
    CertificationRequest.objects.filter(pk=second.json()["id"]).update(status="failed")
    third = ask(provider_owner, node)
    assert third.status_code == 429, third.content
    assert "CERTIFICATION_REQUESTS_PER_DAY" in third.json()["detail"]
    assert int(third["Retry-After"]) > 3600
    assert CertificationRequest.objects.filter(node=node.node).count() == 2  # nothing half-made


def test_one_certificate_that_cannot_be_renewed_does_not_stop_the_others(
        provider_owner: Any, enrol_node: Any, settings: Any) -> None:
    a, b = enrol_node("hz-a"), enrol_node("hz-b")
    certificate(a, days_left=1)
    # A profile that is no longer published cannot be renewed: on main the exception
    # aborted the task, and every later certificate lapsed.
    Certificate.objects.filter(node=a.node).update(profile="withdrawn-profile")
    certificate(b, days_left=2)
    assert issuing.renew_due(lambda n: provider_owner.user) == 1
    assert CertificationRequest.objects.get().node_id == b.node.pk


def test_the_board_takes_one_platform_run_a_day_so_requests_cannot_fill_it(
        provider_owner: Any, buyer: Any, enrol_node: Any, settings: Any) -> None:
    settings.LEADERBOARD_RUNS = 5
    node = enrol_node("hz-1")

    def measured(gbs: float, by_platform: bool) -> None:
        user = provider_owner.user if by_platform else buyer.user
        job, _ = submission.submit(user, [node.node.pk], "storage", by_platform=by_platform)
        claim = lifecycle.claim(node.node, job.runs.get().pk)
        lifecycle.finish(node.node, claim.run.pk, claim.attempt.id, True, [
            {"metric": "storage.checkpoint_write", "value": gbs, "unit": "GB/s", "n": 3,
             "p5": None, "p95": None, "min": None, "max": None, "cv": None, "metadata": {}}],
            "", {})

    measured(0.5, by_platform=False)  # a buyer's run
    for gbs in (3.0, 3.1, 3.2):  # three certification runs at the provider's best hour
        measured(gbs, by_platform=True)
    row = buyer.client().get("/api/v1/leaderboard?metric=storage.checkpoint_write"
                             "&evidence=any").json()["results"][0]
    # The newest platform run of the day and the buyer's: not four runs, three of them chosen.
    assert (row["runs"], row["run_min"], row["run_max"]) == (2, 0.5, 3.2)
