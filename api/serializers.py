"""Request and response shapes of the REST API."""

from __future__ import annotations

from typing import Any

from django.conf import settings
from django.urls import reverse
from drf_spectacular.utils import extend_schema_field
from rest_framework import serializers

from api.site_serializers import SiteFigureSerializer
from board import clusters, links, stability_board
from contract.suites import (
    MEASURING_SUITES,
    PROFILES,
    SUITES,
    UNRANKED_LABEL,
    InvalidParams,
    resolve_params,
)
from fleet.models import Node
from jobs.models import BenchmarkJob, Run, Sample
from jobs.services import intake


class EnrolmentTokenRequestSerializer(serializers.Serializer[Any]):
    region = serializers.SlugField(help_text="region code, e.g. hangzhou")
    node_name = serializers.RegexField(r"^[A-Za-z0-9][A-Za-z0-9._-]{0,127}$")


class EnrolmentTokenSerializer(serializers.Serializer[Any]):
    token = serializers.CharField(help_text="shown once; give it to the host's `benchctl enroll`")
    node_name = serializers.CharField()
    region = serializers.CharField()
    expires_at = serializers.DateTimeField()


class TrialTokenRequestSerializer(serializers.Serializer[Any]):
    hours = serializers.IntegerField(min_value=1, max_value=settings.TRIAL_MAX_HOURS,
                                     default=settings.TRIAL_DEFAULT_HOURS,
                                     help_text="how long the trial lasts: the agent's key works "
                                               "until then")


class TrialTokenSerializer(serializers.Serializer[Any]):
    token = serializers.CharField(help_text="shown once; give it to `benchctl enroll --trial` on "
                                            "the instance you rent, and to no one else")
    node = serializers.IntegerField(help_text="the provider's node the trial measures")
    agent_name = serializers.CharField()
    trial_ends_at = serializers.DateTimeField()
    expires_at = serializers.DateTimeField(help_text="enrol the agent before this")
    command = serializers.CharField()


class EnrolRequestSerializer(serializers.Serializer[Any]):
    token = serializers.CharField(max_length=128)
    trial = serializers.BooleanField(required=False, default=False,
                                     help_text="true for a buyer's trial token (benchctl enroll "
                                               "--trial)")
    address = serializers.CharField(max_length=255, required=False, allow_blank=True, default="")
    iperf3_port = serializers.IntegerField(min_value=1, max_value=65535, required=False,
                                           default=5201)
    inventory = serializers.DictField(required=False, default=dict)


class NodeCredentialsSerializer(serializers.Serializer[Any]):
    node_id = serializers.IntegerField()
    node_name = serializers.CharField()
    api_url = serializers.CharField()
    api_key = serializers.CharField(help_text="shown once; authenticates this node only")
    broker_url = serializers.CharField()
    broker_transport_options = serializers.DictField()
    queue = serializers.CharField()
    broker_acl = serializers.BooleanField()
    heartbeat_seconds = serializers.IntegerField()
    address = serializers.CharField(allow_blank=True)
    iperf3_port = serializers.IntegerField()
    trial_of = serializers.IntegerField(allow_null=True, help_text="a buyer's trial agent: the "
                                        "provider's node it measures; null for a provider's host")
    trial_ends_at = serializers.CharField(allow_blank=True, help_text="ISO 8601; empty when "
                                          "not a trial")


class NodeSerializer(serializers.ModelSerializer[Node]):
    provider = serializers.CharField(source="provider.name")
    provider_kind = serializers.CharField(source="provider.kind")
    region = serializers.CharField(source="region.code")
    province = serializers.CharField(source="region.province")
    city = serializers.CharField(source="region.city")
    online = serializers.BooleanField(read_only=True,
                                      help_text="its worker heartbeated recently")
    predecessor: serializers.PrimaryKeyRelatedField[Node] = serializers.PrimaryKeyRelatedField(
        read_only=True, allow_null=True,
        help_text="the node this host's hardware was enrolled as before, if any "
                  "(its record, revocations included, is this host's)")

    class Meta:
        model = Node
        fields = ["id", "name", "provider", "provider_kind", "region", "province", "city",
                  "status", "online", "enrolled_at", "last_seen_at", "revoked_reason",
                  "predecessor", "trial_of", "trial_ends_at"]
        extra_kwargs = {"trial_of": {"help_text": "a buyer's trial agent: the node it measures "
                                                  "(listed to that buyer only)"},
                        "trial_ends_at": {"help_text": "when the trial agent's key stops working"}}


class BenchmarkRequestSerializer(serializers.Serializer[Any]):
    nodes = serializers.ListField(child=serializers.IntegerField(min_value=1),
                                  min_length=1, max_length=64)
    suite = serializers.ChoiceField(choices=sorted(SUITES))
    profile = serializers.ChoiceField(choices=sorted(PROFILES), default="default",
                                      help_text="quick: shorter runs, for a first look")
    params = serializers.DictField(required=False, default=dict,
                                   help_text="overrides of the suite's documented parameters")

    def validate_params(self, value: dict[str, Any]) -> dict[str, Any]:
        try:
            resolve_params(value)
        except InvalidParams as exc:
            raise serializers.ValidationError(exc.errors) from None
        return value


class SampleSerializer(serializers.ModelSerializer[Sample]):
    class Meta:
        model = Sample
        fields = ["metric", "value", "unit", "n", "p5", "p95", "min", "max", "cv", "metadata",
                  "evidence", "evidence_source"]


class RunSerializer(serializers.ModelSerializer[Run]):
    node = NodeSerializer()
    samples = serializers.SerializerMethodField()
    ranking = serializers.SerializerMethodField(
        help_text='"ranked", or why not: "unranked: custom parameters", "unranked: measures '
                  'nothing" (the no-op suite)')

    class Meta:
        model = Run
        fields = ["id", "node", "status", "progress", "error", "attempts", "queued_at",
                  "started_at", "finished_at", "ranked", "ranking", "requested_by", "samples"]

    def get_ranking(self, run: Run) -> str:
        if run.ranked:
            return "ranked"
        return ("unranked: measures nothing" if run.job.suite not in MEASURING_SUITES
                else UNRANKED_LABEL)

    def get_samples(self, run: Run) -> list[dict[str, Any]]:
        if run.status != Run.Status.SUCCEEDED:
            return []
        return SampleSerializer(run.samples.all(), many=True).data  # type: ignore[return-value]


class BenchmarkJobSerializer(serializers.ModelSerializer[BenchmarkJob]):
    url = serializers.SerializerMethodField()
    status = serializers.SerializerMethodField()
    runs = RunSerializer(many=True)
    links = serializers.SerializerMethodField(
        help_text="multi-node: each direction of each link, with both ends' views")
    cluster = serializers.SerializerMethodField(
        help_text="multi-node with training: the node set's figures; null otherwise")

    class Meta:
        model = BenchmarkJob
        fields = ["id", "url", "suite", "profile", "params", "status", "created_at", "runs",
                  "links", "cluster"]

    @extend_schema_field(serializers.ListField(child=serializers.DictField()))
    def get_links(self, job: BenchmarkJob) -> list[dict[str, Any]]:
        return links.job_links(job)

    @extend_schema_field(serializers.DictField(allow_null=True))
    def get_cluster(self, job: BenchmarkJob) -> dict[str, Any] | None:
        return clusters.job_cluster(job)

    def get_url(self, job: BenchmarkJob) -> str:
        path = reverse("benchmark-detail", args=[job.pk])
        request = self.context.get("request")
        return request.build_absolute_uri(path) if request else path

    def get_status(self, job: BenchmarkJob) -> str:
        """The job's overall state, derived from its runs."""
        return job.overall_status()


class NodeSampleSerializer(serializers.Serializer[Any]):
    """A sample as a host posts it; checked against the metric table (units, ranges)."""

    metric = serializers.CharField(max_length=64)
    value = serializers.FloatField()
    unit = serializers.CharField(max_length=16)
    n = serializers.IntegerField(required=False, default=1)
    p5 = serializers.FloatField(required=False, allow_null=True, default=None)
    p95 = serializers.FloatField(required=False, allow_null=True, default=None)
    min = serializers.FloatField(required=False, allow_null=True, default=None)
    max = serializers.FloatField(required=False, allow_null=True, default=None)
    cv = serializers.FloatField(required=False, allow_null=True, default=None)
    metadata = serializers.DictField(required=False, default=dict)

    def to_internal_value(self, data: Any) -> dict[str, Any]:
        if not isinstance(data, dict):
            raise serializers.ValidationError("each sample must be an object")
        errors = intake.sample_errors(data)
        if errors:
            raise serializers.ValidationError(errors)
        return intake.clean_sample(data)


class RunResultSerializer(serializers.Serializer[Any]):
    attempt_id = serializers.UUIDField()
    status = serializers.ChoiceField(choices=["succeeded", "failed"])
    samples = serializers.ListField(child=NodeSampleSerializer(), required=False, default=list,
                                    max_length=intake.MAX_SAMPLES)
    error = serializers.CharField(required=False, allow_blank=True, default="", max_length=4000)
    inventory = serializers.DictField(required=False, default=dict)

    def validate(self, attrs: dict[str, Any]) -> dict[str, Any]:
        if attrs["status"] == "succeeded" and not attrs["samples"]:
            raise serializers.ValidationError({"samples": "a succeeded run needs samples"})
        return attrs


class RunProgressSerializer(serializers.Serializer[Any]):
    attempt_id = serializers.UUIDField()
    progress = serializers.DictField(required=False, allow_null=True, default=None)


class RunSpecSerializer(serializers.Serializer[Any]):
    run_id = serializers.IntegerField()
    attempt_id = serializers.UUIDField()
    suite = serializers.CharField()
    profile = serializers.CharField()
    probes = serializers.ListField(child=serializers.CharField())
    params = serializers.DictField()
    peers = serializers.ListField(child=serializers.DictField())
    lease_seconds = serializers.IntegerField()
    mesh = serializers.ListField(child=serializers.DictField(),
                                 help_text="every node of the job, with its rank and address")
    node_rank = serializers.IntegerField()
    rendezvous = serializers.DictField(allow_null=True,
                                       help_text="DDP master address and port, multi-node only")


class BarrierRequestSerializer(serializers.Serializer[Any]):
    attempt_id = serializers.UUIDField()
    name = serializers.RegexField(r"^[a-z0-9._-]{1,64}$")


class BarrierStateSerializer(serializers.Serializer[Any]):
    ready = serializers.BooleanField()
    waiting_for = serializers.ListField(child=serializers.CharField())
    broken = serializers.CharField(allow_blank=True)
    activity = serializers.CharField(allow_blank=True, required=False,
                                     help_text="changes while any run of the job makes progress")


class ScoreSerializer(serializers.Serializer[Any]):
    value = serializers.FloatField(allow_null=True, help_text=(
        "0-100, of the counted parts only; null when one of them is missing"))
    parts = serializers.DictField(child=serializers.FloatField(allow_null=True), help_text=(
        "every part against its target, 0-1; null when not measured"))
    missing = serializers.ListField(child=serializers.CharField(),
                                    help_text="the counted parts the node has no figure for")
    counted = serializers.ListField(child=serializers.CharField(), help_text=(
        "the parts the score is made of: the same for every node (board/data/rules.yaml core)"))


class FindingSerializer(serializers.Serializer[Any]):
    code = serializers.CharField()
    verdict = serializers.CharField()
    advice = serializers.CharField()
    rule = serializers.CharField(help_text="the rule it breaks, e.g. diagnosis.high-latency "
                                 "(board/data/rules.yaml) or link_faults.slow_share "
                                 "(board/data/link_faults.yaml); empty for the cluster-wide "
                                 "and stability findings")
    why = serializers.CharField(help_text="that rule's why, in the request's language")
    part = serializers.CharField(default="", help_text="the part it names: node:NAME, or link:A-B (the "
                                 "ends sorted); empty when it is not about one part")
    kind = serializers.CharField(default="", help_text="what is wrong with that part: slow, lossy or "
                                 "latent; empty when it names no part")


class StabilityBriefSerializer(serializers.Serializer[Any]):
    verdict = serializers.CharField(help_text="stable, varies-by-hour, varies, not-enough-data")
    badge = serializers.CharField()
    retests = serializers.IntegerField()
    hours = serializers.IntegerField()
    missed = serializers.IntegerField()
    hour_ratio = serializers.FloatField(allow_null=True)
    worst_hours = serializers.ListField(child=serializers.IntegerField())


class LeaderboardEntrySerializer(serializers.Serializer[Any]):
    rank = serializers.IntegerField(allow_null=True, help_text="null: listed apart, unranked")
    node = NodeSerializer()
    gpu_model = serializers.CharField()
    monthly_price_cny = serializers.IntegerField(allow_null=True)
    metric = serializers.CharField()
    value = serializers.FloatField()
    unit = serializers.CharField()
    n = serializers.IntegerField(help_text="repetitions in the newest of those runs")
    p5 = serializers.FloatField(allow_null=True, help_text=(
        "p5 of the runs the value is the median of: the value is always within p5-p95"))
    p95 = serializers.FloatField(allow_null=True, help_text="p95 of those runs")
    within_p5 = serializers.FloatField(allow_null=True, help_text=(
        "the newest run's own p5 over its n repetitions"))
    within_p95 = serializers.FloatField(allow_null=True, help_text="the newest run's own p95")
    measured_at = serializers.DateTimeField()
    stale = serializers.BooleanField()
    runs = serializers.IntegerField(help_text="ranked runs the value is the median of")
    run_min = serializers.FloatField(allow_null=True, help_text="lowest of those runs")
    run_max = serializers.FloatField(allow_null=True, help_text="highest of those runs")
    runs_apart = serializers.IntegerField(help_text=(
        "of the newest runs, those kept out of the value: the platform ran them beside other "
        "runs on the same machine (the node's enrolled machine-id), and some were measured alone"))
    shared = serializers.BooleanField(help_text=(
        "the value comes from runs measured beside others on the same machine: none was "
        "measured alone"))
    evidence = serializers.ChoiceField(
        choices=list(Sample.LADDER), help_text="the evidence ladder, best first: the platform's "
        "reference recorded it, a buyer's trial agent measured it, the host reports it")
    evidence_source = serializers.CharField(
        allow_blank=True, help_text="the reference endpoint record that matched, or the trial agent")
    requested_by = serializers.CharField(
        help_text="who asked for those runs: buyer, provider (the node's own), platform")
    score = ScoreSerializer()
    price_per_score = serializers.FloatField(allow_null=True, help_text="CNY/month per score point")
    price_per_throughput = serializers.FloatField(
        allow_null=True, help_text="CNY/month per training sample/s")
    diagnosis = FindingSerializer(many=True)
    stability = StabilityBriefSerializer(
        allow_null=True, help_text="the ranked figure across the platform's re-tests at "
                                   "random hours (GET /api/v1/nodes/ID/stability: all of it)")
    new = serializers.BooleanField(help_text="its host does not have a week of the platform's "
                                             "re-tests yet: a first impression, not a record")
    site = SiteFigureSerializer(required=False, allow_null=True, help_text=(
        "with ?site=ID: your site's latest figures of this node (null: not probed from it)"))


def evidence_label(row: Any) -> str:
    """A board row's rung of the ladder: the lowest among the figures it aggregates."""
    return str(row.grade) if row.grade in Sample.LADDER else Sample.HOST_REPORTED


# One field, for every time a board row shows: the representation NodeSerializer gives.
WHEN = serializers.DateTimeField()


def node_brief(node: Node) -> dict[str, Any]:
    """What NodeSerializer says of a node, as a plain dict: a board page shows 100 of them,
    and the serializer's fields took a sixth of its time (#35; tests hold the two equal)."""
    return {"id": node.pk, "name": node.name, "provider": node.provider.name,
            "provider_kind": node.provider.kind, "region": node.region.code,
            "province": node.region.province, "city": node.region.city, "status": node.status,
            "online": node.online, "enrolled_at": WHEN.to_representation(node.enrolled_at),
            "last_seen_at": WHEN.to_representation(node.last_seen_at) if node.last_seen_at else None,
            "revoked_reason": node.revoked_reason, "predecessor": node.predecessor_id,
            "trial_of": node.trial_of_id,
            "trial_ends_at": WHEN.to_representation(node.trial_ends_at) if node.trial_ends_at
            else None}


def entries_data(entries: list[Any]) -> list[dict[str, Any]]:
    return [entry_data(e, node_brief(e.row.node)) for e in entries]


def entry_data(entry: Any, node: Any) -> dict[str, Any]:
    row = entry.row
    return {
        "rank": entry.rank, "node": node, "gpu_model": row.node.gpu_model,
        "monthly_price_cny": row.node.monthly_price_cny, "metric": row.metric, "value": row.value,
        "unit": row.unit, "n": row.n, "p5": row.p5, "p95": row.p95, "within_p5": row.within_p5,
        "within_p95": row.within_p95, "measured_at": row.measured_at,
        "stale": entry.stale, "runs": row.runs, "run_min": row.run_min, "run_max": row.run_max,
        "runs_apart": row.runs_apart, "shared": row.shared,
        "evidence": evidence_label(row), "evidence_source": row.evidence_source,
        "requested_by": row.requested_by, "score": entry.score.as_dict(),
        "price_per_score": entry.price_per_score, "price_per_throughput": entry.price_per_throughput,
        "diagnosis": [f.__dict__ for f in entry.findings],
        "stability": stability_brief(entry.stability), "new": entry.new,
    }


def stability_brief(s: Any) -> dict[str, Any] | None:
    if s is None:
        return None
    return {"verdict": s.verdict, "badge": stability_board.badge(s), "retests": s.retests,
            "hours": s.hours, "missed": s.missed, "hour_ratio": s.hour_ratio,
            "worst_hours": s.worst_hours}


class LeaderboardPageSerializer(serializers.Serializer[Any]):
    metric = serializers.CharField()
    profile = serializers.CharField(help_text="results are compared within this profile only")
    evidence = serializers.ChoiceField(choices=["verified", "measured", "any"],
                                       help_text="which figures rank (measured: platform-verified "
                                                 "and buyer-measured, the default)")
    next = serializers.URLField(allow_null=True)
    results = LeaderboardEntrySerializer(many=True)
    host_reported = LeaderboardEntrySerializer(
        many=True, help_text="nodes whose figures are below the rungs that rank (only their "
                             "host vouches for them): listed apart, unranked (rank is null), "
                             "first page only")


class GroupSerializer(serializers.Serializer[Any]):
    key = serializers.CharField()
    name = serializers.CharField()
    kind = serializers.ChoiceField(choices=["province", "city", "provider"])
    nodes = serializers.IntegerField()
    median = serializers.FloatField(help_text=(
        "the middle node's figure (of two in the middle, the worse one): a figure a node has, "
        "never a mean of two"))
    node = serializers.CharField(help_text="the node whose figure the median is")
    p5 = serializers.FloatField(help_text="p5 across the group's nodes")
    p95 = serializers.FloatField(help_text="p95 across the group's nodes")
    provider_kind = serializers.CharField(allow_blank=True)


class GroupPageSerializer(serializers.Serializer[Any]):
    metric = serializers.CharField()
    profile = serializers.CharField()
    unit = serializers.CharField()
    results = GroupSerializer(many=True)


class HistoryPointSerializer(serializers.Serializer[Any]):
    sample = serializers.IntegerField()
    measured_at = serializers.DateTimeField()
    value = serializers.FloatField()
    unit = serializers.CharField()
    p5 = serializers.FloatField(allow_null=True)
    p95 = serializers.FloatField(allow_null=True)
    n = serializers.IntegerField()
    profile = serializers.CharField()
    run = serializers.IntegerField()
    peer = serializers.CharField(allow_null=True)
    ranked = serializers.BooleanField()
    interval = serializers.ListField(child=serializers.FloatField(), allow_null=True,
                                     help_text="the 95% confidence interval of the median its "
                                     "repetitions reached (none for one repetition)")
    precision = serializers.FloatField(allow_null=True, help_text="the +/- share of the median "
                                       "its profile states (0.02: +/- 2%)")
    noisy = serializers.BooleanField(help_text="the interval is wider than the precision")
    # "label" would shadow Field.label: the unranked mark is "note".
    note = serializers.CharField(allow_blank=True, help_text='"unranked: custom parameters"')
    evidence = serializers.CharField()
    evidence_source = serializers.CharField(allow_blank=True)
    requested_by = serializers.CharField()


class HistorySerializer(serializers.Serializer[Any]):
    node = serializers.IntegerField()
    metric = serializers.CharField()
    next = serializers.URLField(allow_null=True)
    results = HistoryPointSerializer(many=True)


class NodeReportSerializer(serializers.Serializer[Any]):
    node = serializers.IntegerField()
    profile = serializers.CharField()
    metrics = serializers.ListField(child=serializers.DictField())
    score = ScoreSerializer()
    diagnosis = FindingSerializer(many=True)


class NodePriceSerializer(serializers.Serializer[Any]):
    monthly_price_cny = serializers.IntegerField(min_value=0, max_value=100_000_000, allow_null=True)


class CertificationProfileSerializer(serializers.Serializer[Any]):
    name = serializers.CharField()
    version = serializers.IntegerField()
    suite = serializers.CharField()
    description = serializers.CharField()
    criteria = serializers.ListField(child=serializers.DictField())


class CertificationSubmitSerializer(serializers.Serializer[Any]):
    profile = serializers.CharField(max_length=64)
    peers = serializers.ListField(child=serializers.IntegerField(min_value=1), required=False,
                                  default=list, max_length=63,
                                  help_text="other nodes of the provider, for multi-node profiles")


class CertificationRequestSerializer(serializers.Serializer[Any]):
    id = serializers.IntegerField()
    node = serializers.IntegerField(source="node_id")
    profile = serializers.CharField(source="profile.name")
    profile_version = serializers.IntegerField(source="profile.version")
    status = serializers.CharField()
    job = serializers.IntegerField(source="job_id")
    outcome = serializers.DictField()
    certificate = serializers.IntegerField(source="certificate_id", allow_null=True)
    created_at = serializers.DateTimeField()


class CertificateSerializer(serializers.Serializer[Any]):
    document = serializers.DictField(help_text="what was signed (canonical JSON)")
    signature = serializers.CharField(help_text="Ed25519 over the canonical JSON, base64")
    status = serializers.ChoiceField(choices=["valid", "expired", "revoked"])
    revoked_reason = serializers.CharField(allow_blank=True)


def certificate_data(cert: Any) -> dict[str, Any]:
    if cert.revoked_at is not None:
        state = "revoked"
    else:
        state = "valid" if cert.valid else "expired"
    return {"document": cert.document, "signature": cert.signature, "status": state,
            "revoked_reason": cert.revoked_reason}


class ClusterNodeSerializer(serializers.Serializer[Any]):
    id = serializers.IntegerField()
    name = serializers.CharField()


class ClusterEntrySerializer(serializers.Serializer[Any]):
    rank = serializers.IntegerField(allow_null=True, help_text=(
        "within clusters of this size and GPU model; null for the hosts' claims"))
    id = serializers.IntegerField(help_text="this result's id: for /compare/?clusters= and "
                                            "POST /api/v1/estimates")
    size = serializers.IntegerField()
    gpu_model = serializers.CharField(allow_blank=True)
    cluster = serializers.CharField(help_text="its nodes' ids, sorted: the cluster's name")
    name = serializers.CharField(help_text='e.g. "West Lake DC, Hangzhou, 4 x A100"')
    nodes = ClusterNodeSerializer(many=True)
    provider = serializers.CharField()
    region = serializers.CharField()
    job = serializers.IntegerField()
    profile = serializers.CharField()
    measured_at = serializers.DateTimeField()
    value = serializers.FloatField(allow_null=True, help_text="the ranked metric's figure")
    slowest_link_gbps = serializers.FloatField(allow_null=True)
    allreduce_busbw_largest = serializers.FloatField(allow_null=True, help_text="GB/s")
    step_time_ms = serializers.FloatField(allow_null=True)
    comm_share = serializers.FloatField(allow_null=True)
    samples_per_s = serializers.FloatField(allow_null=True)
    price_cny_month = serializers.IntegerField(allow_null=True, help_text="all its nodes")
    price_per_throughput = serializers.FloatField(allow_null=True,
                                                  help_text="CNY a month per sample/s")
    evidence = serializers.CharField(help_text=(
        "buyer-measured (a buyer's trial agents ran the job) or host-reported (the hosts' own)"))
    runs = serializers.IntegerField(help_text="the figures are the median of this many results")
    diagnosis = FindingSerializer(many=True)


class ClusterBoardSerializer(serializers.Serializer[Any]):
    metric = serializers.CharField()
    unit = serializers.CharField()
    evidence = serializers.CharField(help_text="the class that ranks: measured by default")
    results = ClusterEntrySerializer(many=True)
    host_reported = ClusterEntrySerializer(many=True, help_text=(
        "clusters only their hosts measured: the providers' claims, unranked"))


class LinkSerializer(serializers.Serializer[Any]):
    from_node = serializers.IntegerField(help_text="the sender (iperf3 client)")
    from_name = serializers.CharField()
    to_node = serializers.IntegerField(help_text="the receiver")
    to_name = serializers.CharField()
    throughput_gbps = serializers.FloatField(allow_null=True,
                                             help_text="the receiver's count when both agree")
    sender_gbps = serializers.FloatField(allow_null=True)
    receiver_gbps = serializers.FloatField(allow_null=True,
                                           help_text="the receiving node's own server log")
    rtt_ms = serializers.FloatField(allow_null=True, help_text="from -> to: the median TCP round "
                                    "trip, echoed by the receiver's test server")
    agreed = serializers.BooleanField(help_text="both ends' counts agree within 5%")
    confirmed = serializers.BooleanField(help_text="they agree, and the receiver is another "
                                         "provider's host (one provider's two hosts are one word)")
    job = serializers.IntegerField()
    measured_at = serializers.DateTimeField()
    throughput_cv = serializers.FloatField(allow_null=True, help_text=(
        "the sender's run-to-run spread of its throughput (CV over its repetitions)"))
    retransmits_per_gb = serializers.FloatField(allow_null=True, help_text=(
        "TCP segments the sender's OS retransmitted per GB it sent (null when not counted)"))


class LinkMatrixSerializer(serializers.Serializer[Any]):
    nodes = ClusterNodeSerializer(many=True)
    results = LinkSerializer(many=True)
    diagnosis = FindingSerializer(many=True)


class LinkHistorySerializer(serializers.Serializer[Any]):
    results = LinkSerializer(many=True)


class RegionPathSerializer(serializers.Serializer[Any]):
    from_region = serializers.CharField()
    to_region = serializers.CharField()
    links = serializers.IntegerField()
    rtt_ms = serializers.FloatField(allow_null=True)
    throughput_gbps = serializers.FloatField(allow_null=True)
    site = serializers.IntegerField(allow_null=True, help_text=(
        "a row from one of your sites (from_region is its city): yours alone"))
    site_name = serializers.CharField(allow_blank=True)


class RegionPathPageSerializer(serializers.Serializer[Any]):
    results = RegionPathSerializer(many=True)


class ReferenceSlotRequestSerializer(serializers.Serializer[Any]):
    attempt_id = serializers.UUIDField()
    peer = serializers.CharField(max_length=200, help_text="one of the run spec's reference peers")
    seconds = serializers.FloatField(min_value=1, max_value=300, default=60,
                                     help_text="how long the next test holds it")
    release = serializers.BooleanField(default=False, help_text="give the turn back: the test is over")


class ReferenceRecordsSerializer(serializers.Serializer[Any]):
    iperf3 = serializers.ListField(child=serializers.DictField(), default=list, help_text=(
        "the reports its `iperf3 -s -J --logfile` wrote since the last post, as written"))
    echo = serializers.ListField(child=serializers.DictField(), default=list, help_text=(
        "the records its `benchctl echo-server --log` wrote since the last post"))
    through = serializers.FloatField(help_text=(
        "unix time at which the agent read the logs: every record written before it is in"))


class ReferenceRecordsStoredSerializer(serializers.Serializer[Any]):
    stored = serializers.IntegerField()
    skipped = serializers.IntegerField(help_text="not a test's record (an iperf3 error report)")
    through = serializers.FloatField()


class ReferenceAllowlistSerializer(serializers.Serializer[Any]):
    addresses = serializers.ListField(child=serializers.CharField(), help_text=(
        "the active nodes' enrolled and observed addresses (IPv4 and IPv6), sorted: the only "
        "sources the reference's servers take new connections from"))
    generated_at = serializers.FloatField(help_text="unix time at which the list was read")


class Iperf3CredentialSerializer(serializers.Serializer[Any]):
    username = serializers.CharField()
    password = serializers.CharField(help_text="this hold's alone: it ends with the hold")
    public_key = serializers.CharField(help_text="the server's RSA public key (PEM)")


class ReferenceSlotStateSerializer(serializers.Serializer[Any]):
    granted = serializers.BooleanField()
    wait_s = serializers.FloatField(help_text="at most this long until the holder's time runs out")
    iperf3 = Iperf3CredentialSerializer(required=False, help_text=(
        "with a grant, where the server authenticates turns: run iperf3 with --username, "
        "--rsa-public-key-path and IPERF3_PASSWORD"))


class ReferenceIperf3KeySerializer(serializers.Serializer[Any]):
    public_key = serializers.CharField(max_length=8192, trim_whitespace=False, help_text=(
        "the RSA public key (PEM, 2048 bits or more) whose private half the reference's "
        "iperf3 server runs with (--rsa-private-key-path)"))


class ReferenceIperf3UserSerializer(serializers.Serializer[Any]):
    username = serializers.CharField()
    hash = serializers.CharField(help_text='sha256 of "{username}password", as iperf3 reads it')
    addresses = serializers.ListField(child=serializers.CharField(), help_text=(
        "the holder's node's addresses: a test from any other is outside every turn"))


class ReferenceIperf3UsersSerializer(serializers.Serializer[Any]):
    users = ReferenceIperf3UserSerializer(many=True, help_text=(
        "the runs holding the server's turn now: its --authorized-users-path file's lines"))
    generated_at = serializers.FloatField(help_text="unix time at which the list was read")
