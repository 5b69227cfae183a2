"""The record of every benchmark job, its runs (one per node), attempts and samples."""

from __future__ import annotations

import uuid

from django.conf import settings
from django.db import models

from fleet.models import Node


class BenchmarkJob(models.Model):
    owner = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.PROTECT,
                              related_name="benchmark_jobs")
    suite = models.CharField(max_length=32)
    profile = models.CharField(max_length=16, default="default")
    params = models.JSONField(default=dict, blank=True)
    # How many nodes the job measures together: a figure of a multi-node job belongs to a
    # link between two of them or to the set of them, never to one node alone.
    node_count = models.PositiveIntegerField(default=1, db_default=1)
    created_at = models.DateTimeField(auto_now_add=True)
    # Idempotency-Key support: the same key and body return the same job.
    idempotency_key = models.CharField(max_length=128, blank=True)
    request_digest = models.CharField(max_length=64, blank=True)
    # Set once the last run is in and job_finished's receivers have returned (the board has
    # recorded a multi-node job's links and cluster, certification has judged): until then a
    # multi-node job reads as running, so nobody reads it finished with no links. Null on a
    # job whose runs are all in is a job_finished that was lost (a worker killed between the
    # commit and its on-commit hook): the sweeper sends it again (sweeper.settle_lost).
    finished_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        constraints = [
            models.UniqueConstraint(
                fields=["owner", "idempotency_key"], condition=~models.Q(idempotency_key=""),
                name="unique_idempotency_key_per_owner",
            )
        ]
        # The sweeper's look for lost job_finished: only the jobs not finished yet.
        indexes = [models.Index(fields=["created_at"], condition=models.Q(finished_at=None),
                                name="jobs_job_unfinished")]

    def overall_status(self) -> str:
        """The job's state, derived from its runs (the API's and the buyer's page's alike)."""
        states = {r.status for r in self.runs.all()}  # type: ignore[attr-defined]
        for state in ("running", "queued"):
            if state in states:
                return state
        # A multi-node job's figures are its links and cluster, recorded after its last run.
        if self.node_count > 1 and self.finished_at is None:
            return "running"
        if states == {"succeeded"}:
            return "succeeded"
        if states == {"cancelled"}:
            return "cancelled"
        return "failed" if "failed" in states else "finished"


class Run(models.Model):
    """One node's share of a job. PostgreSQL decides who runs it: claim + lease."""

    class RequestedBy(models.TextChoices):
        BUYER = "buyer"
        PROVIDER = "provider"  # the node's own provider: never replaces a buyer's figure
        PLATFORM = "platform"  # certification and scheduled re-tests

    class Status(models.TextChoices):
        QUEUED = "queued"
        RUNNING = "running"
        SUCCEEDED = "succeeded"
        FAILED = "failed"
        CANCELLED = "cancelled"

    FINISHED = (Status.SUCCEEDED, Status.FAILED, Status.CANCELLED)

    job = models.ForeignKey(BenchmarkJob, on_delete=models.CASCADE, related_name="runs")
    node = models.ForeignKey(Node, on_delete=models.PROTECT, related_name="runs")
    status = models.CharField(max_length=16, choices=Status.choices, default=Status.QUEUED)
    progress = models.JSONField(default=dict, blank=True)
    error = models.TextField(blank=True)
    attempts = models.PositiveIntegerField(default=0)
    current_attempt = models.UUIDField(null=True, blank=True)
    lease_expires_at = models.DateTimeField(null=True, blank=True)
    queued_at = models.DateTimeField(auto_now_add=True)
    dispatched_at = models.DateTimeField(null=True, blank=True)
    started_at = models.DateTimeField(null=True, blank=True)
    finished_at = models.DateTimeField(null=True, blank=True)
    inventory = models.JSONField(default=dict, blank=True)
    # Decided at submission: a published profile's suite and parameters (no overrides) on a
    # measuring suite. Only ranked runs reach the board; the others are shown to their owner.
    ranked = models.BooleanField(default=False)
    requested_by = models.CharField(max_length=16, choices=RequestedBy.choices,
                                    default=RequestedBy.BUYER)
    # The platform's own share in a failure, judged on its side when the failure came in:
    # "reference" when a reference the run measures against had gone silent (its agent had
    # handed nothing in for REFERENCE_AGENT_SILENT_S). The host cannot set it: a re-test that
    # failed so is the platform's failure, planned again and never counted against the node.
    fault = models.CharField(max_length=16, blank=True, default="", db_default="")

    class Meta:
        ordering = ["id"]
        indexes = [models.Index(fields=["status", "lease_expires_at"]),
                   models.Index(fields=["node", "status"])]
        # A host runs one probe at a time. A host that claimed all its queued runs by hand
        # held a place in every reference's queue with each, about a day ahead of everyone.
        constraints = [models.UniqueConstraint(fields=["node"], condition=models.Q(status="running"),
                                               name="one_running_run_per_node")]


class Attempt(models.Model):
    """One claim of a run by a node worker; results are accepted once per attempt."""

    id = models.UUIDField(primary_key=True, default=uuid.uuid4, editable=False)
    run = models.ForeignKey(Run, on_delete=models.CASCADE, related_name="attempt_set")
    number = models.PositiveIntegerField()
    claimed_at = models.DateTimeField(auto_now_add=True)
    finished_at = models.DateTimeField(null=True, blank=True)
    outcome = models.CharField(max_length=16, blank=True)


class Sample(models.Model):
    """One metric of a run: the median of its repetitions, with the spread beside it.

    The table is partitioned by month of ``created_at`` (migration 0019, made ahead and rolled
    up by jobs.services.partitions); in the database its key is (id, created_at)."""

    run = models.ForeignKey(Run, on_delete=models.CASCADE, related_name="samples")
    metric = models.CharField(max_length=64)
    value = models.FloatField()
    unit = models.CharField(max_length=16)
    n = models.PositiveIntegerField(default=1)
    p5 = models.FloatField(null=True)
    p95 = models.FloatField(null=True)
    min = models.FloatField(null=True)
    max = models.FloatField(null=True)
    cv = models.FloatField(null=True)
    metadata = models.JSONField(default=dict, blank=True)
    created_at = models.DateTimeField(auto_now_add=True)
    # The evidence ladder, best first: platform-verified (a reference endpoint's own record
    # of the same test matched; evidence_source names it, and the value is the reference's
    # figure), buyer-measured (a buyer's trial agent on an instance it rents), host-reported
    # (the provider's host says so).
    evidence = models.CharField(max_length=20, default="host-reported")
    evidence_source = models.CharField(max_length=255, blank=True)

    HOST_REPORTED = "host-reported"
    BUYER_MEASURED = "buyer-measured"
    PLATFORM_VERIFIED = "platform-verified"
    LADDER = (PLATFORM_VERIFIED, BUYER_MEASURED, HOST_REPORTED)
    # What the default board, the score, certification and estimates stand on.
    MEASURED = (PLATFORM_VERIFIED, BUYER_MEASURED)

    class Meta:
        indexes = [models.Index(fields=["run", "metric"])]


class ReferenceRecord(models.Model):
    """What a reference's own server recorded of one test, as its agent handed it in.

    The payload is the platform's own parse of the server's raw report (the agent sends
    what the server wrote; contract.iperf3_server and the echo record parser read
    it here), so an agent can add nothing a server did not write.
    """

    IPERF3, ECHO = "iperf3", "echo"
    KINDS = [(IPERF3, "iperf3 server report"), (ECHO, "echo server record")]

    # The server's endpoint (ReferenceEndpoint.server_id): endpoints on one server share it.
    endpoint = models.ForeignKey("fleet.ReferenceEndpoint", on_delete=models.CASCADE,
                                 related_name="records")
    kind = models.CharField(max_length=8, choices=KINDS)
    key = models.CharField(max_length=128)  # the iperf3 test's cookie, or the run's echo token
    client = models.CharField(max_length=64)  # the address the server saw the test come from
    started = models.FloatField()  # unix seconds, the server's clock
    payload = models.JSONField()
    received_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        constraints = [models.UniqueConstraint(fields=["endpoint", "kind", "key", "started"],
                                               name="one_reference_record_per_test")]
        indexes = [models.Index(fields=["endpoint", "kind", "started"]),
                   models.Index(fields=["endpoint", "kind", "key"])]


class ReferenceRecordUse(models.Model):
    """A reference endpoint's record of one test, spent on the run that claimed it.

    A test's iperf3 cookie is chosen by the client: without this, one host could present
    the record of a test another host (or a hand-run iperf3) made.
    """

    endpoint = models.ForeignKey("fleet.ReferenceEndpoint", on_delete=models.CASCADE,
                                 related_name="+")
    key = models.CharField(max_length=128)
    run = models.ForeignKey(Run, on_delete=models.CASCADE, related_name="+")

    class Meta:
        constraints = [models.UniqueConstraint(fields=["endpoint", "key"],
                                               name="one_use_per_reference_record")]


class BarrierArrival(models.Model):
    """A node's run reached a named point of a multi-node job (a matrix round, DDP start)."""

    run = models.ForeignKey(Run, on_delete=models.CASCADE, related_name="arrivals")
    name = models.CharField(max_length=64)
    arrived_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        constraints = [models.UniqueConstraint(fields=["run", "name"], name="one_arrival_per_run")]


class ReferenceSlot(models.Model):
    """Who may test against a reference endpoint's iperf3 server now (it serves one test at
    a time): one row per endpoint, held by a run until it lets go or ``expires_at``."""

    endpoint = models.OneToOneField("fleet.ReferenceEndpoint", on_delete=models.CASCADE,
                                    related_name="+")
    run = models.ForeignKey(Run, on_delete=models.CASCADE, related_name="+")
    expires_at = models.DateTimeField()
    taken_at = models.DateTimeField()  # when this run's hold began (asking again extends it)


class ReferenceTurn(models.Model):
    """When a run held a reference server's turn: every test the server logged from the
    node's address inside it is that run's, and must be among the tests it presents (a
    host may not run several and show the best)."""

    endpoint = models.ForeignKey("fleet.ReferenceEndpoint", on_delete=models.CASCADE,
                                 related_name="+")  # the server's (ReferenceEndpoint.server_id)
    run = models.ForeignKey(Run, on_delete=models.CASCADE, related_name="reference_turns")
    # The attempt that held it: a killed attempt's tests are not the next attempt's to show.
    attempt = models.UUIDField(null=True)
    started_at = models.DateTimeField()
    ended_at = models.DateTimeField()  # moved on each extension, and to the give-back


class ReferenceQueue(models.Model):
    """A run waiting for a reference's turn: served first come, first served."""

    endpoint = models.ForeignKey("fleet.ReferenceEndpoint", on_delete=models.CASCADE,
                                 related_name="+")
    run = models.ForeignKey(Run, on_delete=models.CASCADE, related_name="+")
    first_asked_at = models.DateTimeField()
    last_asked_at = models.DateTimeField()

    class Meta:
        constraints = [models.UniqueConstraint(fields=["endpoint", "run"],
                                               name="one_place_per_run_in_a_reference_queue")]


class Retest(models.Model):
    """One scheduled re-test of a node by the platform: planned at a random time, then run,
    skipped (the node was paused) or missed (offline, refused, failed: it counts against
    the node). The schedule is never shown to the node or its provider before it is due."""

    class Status(models.TextChoices):
        PLANNED = "planned"
        SUBMITTED = "submitted"
        DONE = "done"
        MISSED = "missed"  # counts against the node
        PAUSED = "paused"  # the provider paused re-tests then (the pause itself is judged)
        BUSY = "busy"  # a buyer's job kept the node busy past every deferral: not counted
        SKIPPED = "skipped"  # the platform's scheduler was down when it was due: not counted

    node = models.ForeignKey(Node, on_delete=models.CASCADE, related_name="retests")
    due_at = models.DateTimeField()
    status = models.CharField(max_length=16, choices=Status.choices, default=Status.PLANNED)
    job = models.ForeignKey(BenchmarkJob, null=True, blank=True, on_delete=models.SET_NULL,
                            related_name="+")
    reason = models.CharField(max_length=255, blank=True)  # why missed or paused
    deferred = models.PositiveIntegerField(default=0)  # times it waited for a buyer's job
    settled_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        indexes = [models.Index(fields=["status", "due_at"]),
                   # Each node's re-tests in the stability window, read from the index alone
                   # (board.stability_board): 11 -> 2.6 ms a board page at 10,000 hosts
                   # re-tested 4 times a day, whose rows lie on a page each (#35).
                   models.Index(fields=["node", "due_at"], include=["id", "status"],
                                name="retest_node_due_covering")]


class Site(models.Model):
    """A place of the buyer's own (an office, storage, a data lake) that they measure nodes
    from with `benchctl probe`. Its figures are the buyer's: never ranked, never shown to
    anyone else."""

    owner = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.CASCADE,
                              related_name="sites")
    name = models.CharField(max_length=128)
    city = models.CharField(max_length=64)  # as contract.places lists it, in English
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        constraints = [models.UniqueConstraint(fields=["owner", "name"],
                                               name="one_site_of_a_name_per_buyer")]


class SiteProbe(models.Model):
    """One probe of a node from a site: its token (stored as a digest), the node's own
    record of the session (its claim, and the confirmation), and what the buyer's CLI
    measured (the figures stored)."""

    site = models.ForeignKey(Site, on_delete=models.CASCADE, related_name="probes")
    node = models.ForeignKey(Node, on_delete=models.CASCADE, related_name="site_probes")
    token_hash = models.CharField(max_length=64, unique=True)
    created_at = models.DateTimeField(auto_now_add=True)
    expires_at = models.DateTimeField()
    claimed_at = models.DateTimeField(null=True, blank=True)  # the node's test server took it
    node_record = models.JSONField(null=True, blank=True)  # the node's: its timings, cookies
    measured_at = models.DateTimeField(null=True, blank=True)  # the buyer's figures came in
    rtts_ms = models.JSONField(default=list, blank=True)  # as the buyer's CLI timed them
    rtt_ms = models.FloatField(null=True, blank=True)  # their median
    upload_gbps = models.FloatField(null=True, blank=True)  # site -> node, the CLI's receiver
    download_gbps = models.FloatField(null=True, blank=True)  # node -> site
    hops = models.JSONField(default=list, blank=True)  # tracepath's, from the site
    hop_count = models.PositiveIntegerField(null=True, blank=True)
    cookies = models.JSONField(default=list, blank=True)  # the buyer's iperf3 tests' ids
    # The node's record names each of the buyer's tests (by cookie) and its round trips.
    confirmed = models.BooleanField(default=False)

    class Meta:
        indexes = [models.Index(fields=["site", "node", "-measured_at"])]
