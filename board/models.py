"""The board's tables: each node's board value per metric (recomputed when a ranked run
lands), and a multi-node job's links and cluster (recorded when the job finishes).

The leaderboard reads LatestResult instead of scanning every sample. A value is the median of the
node's last LEADERBOARD_RUNS ranked runs in the window, with their p5-p95, in three evidence classes:
"verified" (only figures a reference endpoint's own record matched), "measured" (those and
buyer-measured ones: the default board) and "any" (host-reported too).
"""

from django.db import models

from fleet.models import Node, Provider, Region


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
    # The spread of the runs the value is the median of (#32): the value is always inside it.
    p5 = models.FloatField(null=True)
    p95 = models.FloatField(null=True)
    # The newest run's own spread over its n repetitions (and its CV): the per-run noise.
    within_p5 = models.FloatField(null=True)
    within_p95 = models.FloatField(null=True)
    cv = models.FloatField(null=True)
    # A GPU figure a CPU measured (the probe's device was the CPU: no GPU on the host, or
    # none it could use). Kept for CPU-only jobs and the node's page; never ranked, starred,
    # scored or taken as a GPU's by an estimate (#32).
    stand_in = models.BooleanField(default=False)
    # Runs the platform ran beside others on the same machine (board.beside) stay out of a
    # median of runs measured alone: ``runs_apart`` of the newest were kept apart, and
    # ``shared`` marks a value only shared runs gave (none was measured alone).
    shared = models.BooleanField(default=False)
    runs_apart = models.PositiveIntegerField(default=0)
    run = models.ForeignKey("jobs.Run", on_delete=models.CASCADE, related_name="+")
    measured_at = models.DateTimeField()

    class Meta:
        constraints = [models.UniqueConstraint(fields=["node", "metric", "profile", "evidence"],
                                               name="one_value_per_node_metric_profile_evidence")]
        indexes = [
            # The ranking: one metric, profile and class, by value.
            models.Index(fields=["metric", "profile", "evidence", "value"]),
            # Which nodes hold a figure of a class, read from the index alone: the busiest
            # profile's count and the host-reported list's anti-join, each over every node
            # (11 and 24 ms at 10,000 nodes from the table's pages, 2 and 6 from this, #35).
            models.Index(fields=["metric", "evidence", "profile", "stand_in", "node"],
                         name="latest_node_by_class"),
            # The nodes a host's claims could be listed apart for: only the host vouches for
            # some figure of their "any" row. Few on an honest board, so the host-reported
            # list reads these, not every node's (11 ms at 10,000 nodes with none, #35).
            models.Index(fields=["metric", "profile", "node"], name="latest_host_reported",
                         condition=models.Q(evidence="any", grade="host-reported",
                                            stand_in=False)),
        ]


class LinkResult(models.Model):
    """One direction of one link in a multi-node job: ``source`` sent, ``target`` received.

    Both ends' views: the sender's iperf3 client (its sample) and the receiving node's own
    iperf3 server log of the same tests, matched by cookie. The link is ``agreed`` when
    the two counts agree within LINK_AGREEMENT (its figure is then the receiver's count), and
    ``confirmed`` when they agree and the receiver is another provider's host.
    """

    job = models.ForeignKey("jobs.BenchmarkJob", on_delete=models.CASCADE, related_name="links")
    source = models.ForeignKey(Node, on_delete=models.PROTECT, related_name="links_out")
    target = models.ForeignKey(Node, on_delete=models.PROTECT, related_name="links_in")
    throughput_gbps = models.FloatField(null=True)
    sender_gbps = models.FloatField(null=True)
    receiver_gbps = models.FloatField(null=True)
    rtt_ms = models.FloatField(null=True)  # source -> target, TCP echo median; reverse row: other way
    # The sender's run-to-run spread of the throughput (CV over its repetitions), and what it
    # retransmitted per GB sent (its OS's count: a lossy path). Read by board/link_faults.py.
    throughput_cv = models.FloatField(null=True)
    retransmits_per_gb = models.FloatField(null=True)
    # Both ends counted the same tests; confirmed only when the receiver is another
    # provider's host (two hosts of one provider can agree on a lie).
    agreed = models.BooleanField(default=False)
    confirmed = models.BooleanField(default=False)
    ranked = models.BooleanField(default=False)  # the job's runs all rank (a published profile)
    profile = models.CharField(max_length=16, default="default")
    measured_at = models.DateTimeField()

    class Meta:
        db_table = "jobs_linkresult"  # written by jobs until #31; the table kept its name
        constraints = [models.UniqueConstraint(fields=["job", "source", "target"],
                                               name="one_link_result_per_job_direction")]
        indexes = [models.Index(fields=["source", "target", "measured_at"])]


class ClusterResult(models.Model):
    """A multi-node job's figures of its whole node set (DDP across the nodes).

    A cluster is named by its nodes (``key``: their ids, sorted). When all of them are one
    provider's in one region it is an ``offer`` the board can rank; a job that mixes
    providers or regions is kept and shown to its owner, and ranks no cluster.
    """

    job = models.OneToOneField("jobs.BenchmarkJob", on_delete=models.CASCADE, related_name="cluster")
    nodes = models.ManyToManyField(Node, related_name="clusters")
    key = models.TextField()
    size = models.PositiveIntegerField()
    provider = models.ForeignKey(Provider, null=True, on_delete=models.PROTECT, related_name="+")
    region = models.ForeignKey(Region, null=True, on_delete=models.PROTECT, related_name="+")
    gpu_model = models.CharField(max_length=64, blank=True)
    offer = models.BooleanField(default=False)
    ranked = models.BooleanField(default=False)
    profile = models.CharField(max_length=16, default="default")
    # metric -> {"value", "unit", "n"}: the training figures of the first rank's run (every
    # rank takes part in the same collectives; rank 0 times them for the job).
    figures = models.JSONField(default=dict)
    slowest_link_gbps = models.FloatField(null=True)
    measured_at = models.DateTimeField()
    # The evidence ladder (Sample.LADDER): buyer-measured when every run was on a trial agent
    # of the buyer who asked (the nodes are then the provider's nodes those agents measure);
    # otherwise the hosts' own word. Only measured clusters rank by default.
    grade = models.CharField(max_length=24, default="host-reported")

    class Meta:
        db_table = "jobs_clusterresult"
        indexes = [models.Index(fields=["size", "gpu_model", "measured_at"])]
