"""A summary table: each node's board value per metric, recomputed when a ranked run lands.

The leaderboard reads this instead of scanning every sample. A value is the median of the
node's last LEADERBOARD_RUNS ranked runs in the window, in three evidence classes:
"verified" (only figures a reference endpoint's own record matched), "measured" (those and
buyer-measured ones: the default board) and "any" (host-reported too).
"""

from django.db import models

from fleet.models import Node


class LatestResult(models.Model):
    VERIFIED, MEASURED, ANY = "verified", "measured", "any"

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
    # The lowest rung of the evidence ladder among the figures aggregated (Sample.LADDER).
    grade = models.CharField(max_length=20, default="host-reported")
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
