"""Certification: published profiles, the platform's certification runs, signed certificates."""

from django.db import models

from fleet.models import Node


class Certificate(models.Model):
    """A signed statement that a node met a certification profile's thresholds."""

    node = models.ForeignKey(Node, on_delete=models.CASCADE, related_name="certificates")
    profile = models.CharField(max_length=64)
    profile_version = models.PositiveIntegerField(default=1)
    tier = models.CharField(max_length=16)
    document = models.JSONField()  # exactly what was signed
    signature = models.CharField(max_length=128)  # Ed25519, base64
    issued_at = models.DateTimeField()
    expires_at = models.DateTimeField()
    revoked_at = models.DateTimeField(null=True, blank=True)
    revoked_reason = models.CharField(max_length=255, blank=True)
    run = models.ForeignKey("jobs.Run", null=True, on_delete=models.SET_NULL, related_name="+")

    class Meta:
        # The table keeps the name it had when certification lived in the leaderboard app.
        db_table = "leaderboard_certificate"
        indexes = [models.Index(fields=["node", "expires_at"])]

    @property
    def valid(self) -> bool:
        from django.utils import timezone

        return self.revoked_at is None and self.expires_at > timezone.now()


class CertificationProfile(models.Model):
    """A published set of thresholds (loaded from certification/profiles.yaml)."""

    name = models.SlugField()
    version = models.PositiveIntegerField()
    suite = models.CharField(max_length=32)
    description = models.TextField(blank=True)
    description_zh = models.TextField(blank=True, default="", db_default="")  # Simplified Chinese
    criteria = models.JSONField()  # each criterion's "why" may have a "why_zh" beside it
    # Shown on the public certification page and API. A lab's own profile (the demo's) is
    # not: a buyer must not read a lab's reduced criteria as a published standard.
    published = models.BooleanField(default=True, db_default=True)

    class Meta:
        db_table = "leaderboard_certificationprofile"
        constraints = [models.UniqueConstraint(fields=["name", "version"], name="one_profile_version")]


class CertificationRequest(models.Model):
    """A certification run the platform scheduled, with parameters it chose."""

    class Status(models.TextChoices):
        RUNNING = "running"
        EVALUATING = "evaluating"  # claimed by the one evaluation that will decide it
        CERTIFIED = "certified"
        FAILED = "failed"

    node = models.ForeignKey(Node, on_delete=models.CASCADE, related_name="certification_requests")
    profile = models.ForeignKey(CertificationProfile, on_delete=models.PROTECT)
    job = models.OneToOneField("jobs.BenchmarkJob", on_delete=models.CASCADE,
                               related_name="certification")
    status = models.CharField(max_length=16, choices=Status.choices, default=Status.RUNNING)
    outcome = models.JSONField(default=dict, blank=True)  # criteria with values and margins
    created_at = models.DateTimeField(auto_now_add=True)
    certificate = models.OneToOneField("Certificate", null=True, blank=True,
                                       on_delete=models.SET_NULL, related_name="request")

    class Meta:
        db_table = "leaderboard_certificationrequest"
