"""A summary table: each node's latest value per metric, upserted when results land.

The leaderboard reads this instead of scanning every sample for the newest per node.
"""

from django.db import models

from fleet.models import Node


class LatestResult(models.Model):
    node = models.ForeignKey(Node, on_delete=models.CASCADE, related_name="latest_results")
    metric = models.CharField(max_length=64)
    value = models.FloatField()
    unit = models.CharField(max_length=16)
    n = models.PositiveIntegerField(default=1)
    p5 = models.FloatField(null=True)
    p95 = models.FloatField(null=True)
    cv = models.FloatField(null=True)
    run = models.ForeignKey("jobs.Run", on_delete=models.CASCADE, related_name="+")
    measured_at = models.DateTimeField()

    class Meta:
        constraints = [models.UniqueConstraint(fields=["node", "metric"],
                                               name="one_latest_per_node_metric")]
        indexes = [models.Index(fields=["metric", "value"])]
