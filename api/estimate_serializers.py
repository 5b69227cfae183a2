"""The workload estimate's request and answer (POST /api/v1/estimates)."""

from __future__ import annotations

from typing import Any

from rest_framework import serializers

from board import estimate, estimate_board, staging
from contract import outcomes

MAX_IDS = estimate_board.MAX_CANDIDATES


def ids() -> serializers.IntegerField:
    return serializers.IntegerField(min_value=1, max_value=2**31 - 1)  # PostgreSQL's integer



class WorkloadSerializer(serializers.Serializer[Any]):
    preset = serializers.ChoiceField(choices=sorted(estimate.presets()), required=False,
                                     help_text="a model from board/data/workloads.yaml; "
                                               "explicit figures below override it")
    params = serializers.FloatField(min_value=1e3, max_value=1e13, required=False,
                                    help_text="trainable parameters")
    train_flops_per_sample = serializers.FloatField(
        min_value=1.0, max_value=1e18, required=False,
        help_text="FLOPs of one training sample, forward and backward (6 x params x tokens "
                  "for a transformer)")
    global_batch = serializers.IntegerField(min_value=1, max_value=10_000_000, required=False,
                                            help_text="samples per optimizer step, all ranks")
    precision = serializers.ChoiceField(choices=sorted(estimate_board.MATMUL), required=False,
                                        help_text="which measured matmul figure compute uses")
    sample_bytes = serializers.IntegerField(min_value=0, max_value=2**34, required=False,
                                            help_text="one stored sample's mean size")
    steps = serializers.IntegerField(min_value=1, max_value=10**9)
    nodes = serializers.IntegerField(min_value=1, max_value=1024, default=1)
    gpus_per_node = serializers.IntegerField(min_value=1, max_value=64, default=1)
    accumulation = serializers.IntegerField(min_value=1, max_value=1024, default=1,
                                            help_text="micro-steps per optimizer step")
    packed = serializers.BooleanField(default=True,
                                      help_text="false: one file per sample (small files)")
    checkpoint_gb = serializers.FloatField(min_value=0.0, max_value=1e6, default=0.0)
    checkpoint_interval = serializers.IntegerField(min_value=0, max_value=10**9, default=0,
                                                   help_text="steps between checkpoints")
    cpu_only = serializers.BooleanField(default=False, help_text=(
        "a job that runs on CPUs: a CPU's matmul is then its compute figure; a GPU job "
        "(the default) never takes one, and uses the enrolled GPU's datasheet figure where no "
        "GPU was measured"))

    dataset_gb = serializers.FloatField(min_value=0.0, max_value=1e7, default=0.0,
                                        help_text="the training data's size")
    data_at = serializers.ChoiceField(choices=[staging.ON_NODE, staging.SITE],
                                      default=staging.ON_NODE,
                                      help_text="where the data lives: already on the node, "
                                                "or at one of your sites (give site)")
    site = serializers.IntegerField(min_value=1, max_value=2**31 - 1, required=False,
                                    help_text="your site's id (GET /api/v1/sites)")
    data_use = serializers.ChoiceField(choices=[staging.COPY_ONCE, staging.STREAM],
                                       default=staging.COPY_ONCE,
                                       help_text="copy the data to the node once, or stream "
                                                 "it from the site every step")

    def validate(self, data: dict[str, Any]) -> dict[str, Any]:
        if (data.get("data_at") == staging.SITE) != ("site" in data):
            raise serializers.ValidationError(
                {"site": "data_at site needs your site's id (site), and a site needs "
                         "data_at site"})
        explicit = ("params", "train_flops_per_sample", "global_batch")
        if "preset" not in data and any(k not in data for k in explicit):
            raise serializers.ValidationError(
                "give a preset, or params, train_flops_per_sample and global_batch")
        return data

class CandidateFiltersSerializer(serializers.Serializer[Any]):
    """Which of the board's candidates, and in what order: the estimate's and the verdict's."""

    region = serializers.CharField(max_length=64, required=False, allow_blank=True,
                                   help_text=("the board's candidates in this province or city "
                                              "(an estimate: when no ids are given)"))
    provider = serializers.CharField(max_length=128, required=False, allow_blank=True)
    gpu_model = serializers.CharField(max_length=128, required=False, allow_blank=True)
    max_price = serializers.IntegerField(min_value=0, max_value=10**9, required=False,
                                         help_text="CNY a month for the whole candidate")
    rank_by = serializers.ChoiceField(choices=estimate_board.RANK_BY, default="cost")
    evidence = serializers.ChoiceField(choices=["verified", "measured", "any"], required=False,
                                       help_text=("measured (default): figures the platform "
                                                  "verified or a buyer's trial agent measured; "
                                                  "any: the hosts' claims too"))

    def filters(self) -> dict[str, Any]:
        """The Selection's fields these give."""
        d = self.validated_data
        return {"region": d.get("region", ""), "provider": d.get("provider", ""),
                "gpu_model": d.get("gpu_model", ""), "max_price": d.get("max_price"),
                "evidence": d.get("evidence", "")}


class EstimateRequestSerializer(CandidateFiltersSerializer):
    """A buyer's job and its candidates: ids, or the board's filters."""

    workload = WorkloadSerializer()
    nodes = serializers.ListField(child=ids(), required=False,
                                  max_length=MAX_IDS, help_text="candidate node ids (one-node jobs)")
    clusters = serializers.ListField(child=ids(), required=False,
                                     max_length=MAX_IDS,
                                     help_text="candidate cluster ids (the cluster board's id)")
    profile = serializers.CharField(max_length=16, required=False, allow_blank=True)

    def build_workload(self, site: Any = None) -> estimate.Workload:
        """The workload; ``site`` is the caller's own site that the data lives at (the view
        found it among the caller's: another buyer's reads as missing)."""
        data = dict(self.validated_data["workload"])
        data.pop("data_at")
        data.pop("site", None)
        if site is not None:
            data |= {"data_site": site.pk, "data_site_name": site.name,
                     "data_site_city": site.city}
        preset = data.pop("preset", None)
        shape = {k: data.pop(k) for k in ("steps", "nodes", "gpus_per_node")}
        ckpt = {"checkpoint_bytes": data.pop("checkpoint_gb") * 1e9,
                "checkpoint_interval": data.pop("checkpoint_interval")}
        if preset is not None:
            return estimate.from_preset(preset, **shape, **ckpt, **data)
        return estimate.Workload(name="custom", **shape, **ckpt, **data)

    def selection(self) -> estimate_board.Selection:
        d = self.validated_data
        return estimate_board.Selection(
            nodes=tuple(dict.fromkeys(d.get("nodes", []))),
            clusters=tuple(dict.fromkeys(d.get("clusters", []))),
            profile=d.get("profile", ""), **self.filters())


class PartsSerializer(serializers.Serializer[Any]):
    compute = serializers.FloatField()
    sync = serializers.FloatField(help_text="gradient sync not hidden behind backward")
    input = serializers.FloatField(help_text="input stall")
    checkpoint = serializers.FloatField(help_text="checkpoint writes, per step")
    staging = serializers.FloatField(required=False, help_text="what streaming the data from "
                                     "your site adds (present when the data is at a site)")


class WhatIfSerializer(serializers.Serializer[Any]):
    name = serializers.CharField(help_text="accumulation_x4, packed, link_<rate>gbe")
    step_s = serializers.FloatField()
    hours = serializers.FloatField()
    cost_cny = serializers.FloatField(allow_null=True)


class StagingSerializer(serializers.Serializer[Any]):
    code = serializers.ChoiceField(choices=sorted(outcomes.STAGING), help_text=(
        "copy-once, stream, or unknown (no probe from the site reached the candidate)"))
    values = serializers.DictField(help_text="site, gb, copy_hours, gbps, rtt_ms, seconds "
                                             "(what streaming adds a step)")


class EstimateSerializer(serializers.Serializer[Any]):
    parts_s = PartsSerializer(help_text="seconds per optimizer step")
    shares = PartsSerializer(help_text="each part's share of the step")
    step_s = serializers.FloatField()
    sync_total_s = serializers.FloatField(help_text="the whole all-reduce time, hidden or not")
    overlap = serializers.FloatField(help_text="share of the gradient sync hidden behind backward")
    hours = serializers.FloatField()
    cost_cny = serializers.FloatField(allow_null=True, help_text="null: the candidate has no price")
    bottleneck = serializers.CharField(allow_blank=True, help_text='"" when compute bounds it')
    summary = serializers.CharField(help_text=(
        "the bottleneck and the best what-if in a sentence, in the request's language, worded "
        "from bottleneck, shares and what_ifs"))
    unmeasured = serializers.ListField(child=serializers.CharField(),
                                       help_text="parts without a figure: counted as 0")
    what_ifs = WhatIfSerializer(many=True)
    staging = StagingSerializer(required=False, help_text=(
        "the data's way from your site: {} when it is on the node"))


class AtHoursSerializer(EstimateSerializer):
    hours_of_day = serializers.ListField(child=serializers.IntegerField())
    link_share = serializers.FloatField(help_text=(
        "the link at those hours against its typical hour (the median of its hourly medians "
        "over the platform's re-tests; the slowest node's, for several)"))


class ByHourSerializer(serializers.Serializer[Any]):
    worst = AtHoursSerializer(required=False, help_text="the job at its links' worst hours")
    best = AtHoursSerializer(required=False, help_text="the job at its links' best hours")


class CandidateSerializer(serializers.Serializer[Any]):
    rank = serializers.IntegerField(allow_null=True, help_text="null: skipped")
    kind = serializers.CharField(help_text="node or cluster")
    id = serializers.IntegerField()
    name = serializers.CharField()
    provider = serializers.CharField()
    region = serializers.CharField()
    city = serializers.CharField(required=False, help_text="the region's city, in English")
    nodes = serializers.ListField(child=serializers.DictField())
    price_cny_month = serializers.IntegerField(allow_null=True)
    profile = serializers.CharField()
    on_cpu = serializers.BooleanField(help_text="compute is a CPU's figure (no GPU on the host)")
    copies = serializers.IntegerField(help_text=(
        "how many of its nodes the job rents: N for a node offered to an N-node job (the "
        "recommendations), else 1"))
    modelled = serializers.BooleanField(help_text=(
        "its gradient sync is modelled on the node's own measured link: no N of its nodes "
        "were measured together"))
    by_hour = ByHourSerializer(help_text=(
        "a multi-node job at the worst and the best hours of the day of its links, from the "
        "platform's re-tests; empty for a one-node job or nodes never re-tested across the day"))
    sources = serializers.DictField(child=serializers.CharField(),
                                    help_text="each figure used and the record it came from")
    evidence = serializers.CharField(help_text=(
        "the lowest rung of the figures it stands on: platform-verified, buyer-measured or "
        "host-reported (with evidence any)"))
    estimate = EstimateSerializer(allow_null=True)
    skipped = serializers.CharField(allow_blank=True, help_text=(
        "why there is no estimate, in the request's language (worded from skipped_code)"))
    skipped_code = serializers.ChoiceField(
        choices=["", *outcomes.SKIPPED], allow_blank=True,
        help_text="why there is no estimate, as a code a client can word itself (contract/outcomes.py)")
    skipped_values = serializers.DictField(help_text="the values the code's words name")


class EstimateWorkloadEchoSerializer(serializers.Serializer[Any]):
    name = serializers.CharField()
    params = serializers.FloatField()
    train_flops_per_sample = serializers.FloatField()
    global_batch = serializers.IntegerField()
    steps = serializers.IntegerField()
    nodes = serializers.IntegerField()
    gpus_per_node = serializers.IntegerField()
    ranks = serializers.IntegerField()
    accumulation = serializers.IntegerField()
    precision = serializers.CharField()
    packed = serializers.BooleanField()
    gradient_bytes = serializers.FloatField()


class EstimatePageSerializer(serializers.Serializer[Any]):
    workload = EstimateWorkloadEchoSerializer()
    rank_by = serializers.CharField()
    model = serializers.CharField(help_text="where the formulas are written down")
    results = CandidateSerializer(many=True)
