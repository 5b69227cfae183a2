"""A summary table: each node's board value per metric, recomputed when a ranked run lands.

The leaderboard reads this instead of scanning every sample. A value is the median of the
node's last LEADERBOARD_RUNS ranked runs in the window, in two evidence classes: "verified"
(only figures a reference endpoint's own record matched) and "any" (host-reported too).
"""

from django.db import models

from fleet.models import Node


class LatestResult(models.Model):
    VERIFIED, ANY = "verified", "any"

    node = models.ForeignKey(Node, on_delete=models.CASCADE, related_name="latest_results")
    metric = models.CharField(max_length=64)
    # Only figures measured the same way are ranked together.
    profile = models.CharField(max_length=16, default="default")
    evidence = models.CharField(max_length=16, default=ANY)
    value = models.FloatField()  # median over the runs
    runs = models.PositiveIntegerField(default=1)
    run_min = models.FloatField(null=True)  # run-to-run spread
    run_max = models.FloatField(null=True)
    # Every value aggregated was platform-verified; and who asked for those runs.
    verified = models.BooleanField(default=False)
    evidence_source = models.CharField(max_length=255, blank=True)
    requested_by = models.CharField(max_length=64, blank=True)
    unit = models.CharField(max_length=16)
    n = models.PositiveIntegerField(default=1)
    p5 = models.FloatField(null=True)
    p95 = models.FloatField(null=True)
    cv = models.FloatField(null=True)
    run = models.ForeignKey("jobs.Run", on_delete=models.CASCADE, related_name="+")
    measured_at = models.DateTimeField()

    class Meta:
        constraints = [models.UniqueConstraint(fields=["node", "metric", "profile", "evidence"],
                                               name="one_value_per_node_metric_profile_evidence")]
        indexes = [models.Index(fields=["metric", "profile", "evidence", "value"])]


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
        indexes = [models.Index(fields=["node", "expires_at"])]

    @property
    def valid(self) -> bool:
        from django.utils import timezone

        return self.revoked_at is None and self.expires_at > timezone.now()


class CertificationProfile(models.Model):
    """A published set of thresholds (loaded from leaderboard/certification/profiles.yaml)."""

    name = models.SlugField()
    version = models.PositiveIntegerField()
    suite = models.CharField(max_length=32)
    description = models.TextField(blank=True)
    criteria = models.JSONField()

    class Meta:
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
