"""The verdict's query and answer (GET /api/v1/recommendations): the job in the query string,
as a procurement tool asks it; the best candidates, the ones to avoid and the unknown."""

from __future__ import annotations

from typing import Any

from rest_framework import serializers

from api.estimate_serializers import (
    AtHoursSerializer,
    CandidateFiltersSerializer,
    CandidateSerializer,
    EstimateWorkloadEchoSerializer,
)
from board import estimate, estimate_board, verdict
from board.stability import VERDICTS


class RecommendationQuerySerializer(CandidateFiltersSerializer):
    """The job, by a preset, and the board's filters over its candidates."""

    preset = serializers.ChoiceField(choices=sorted(estimate.presets()),
                                     default=verdict.DEFAULT_PRESET,
                                     help_text="the model trained (board/data/workloads.yaml)")
    steps = serializers.IntegerField(min_value=1, max_value=10**9, default=verdict.DEFAULT_STEPS)
    nodes = serializers.IntegerField(min_value=1, max_value=1024, default=verdict.DEFAULT_NODES,
                                     help_text="nodes the job runs on (default: 2, "
                                               "multi-node data-parallel training)")
    gpus_per_node = serializers.IntegerField(min_value=1, max_value=64, default=1)
    cpu_only = serializers.BooleanField(default=False)

    def workload(self) -> estimate.Workload:
        d = self.validated_data
        return estimate.from_preset(d["preset"], steps=d["steps"], nodes=d["nodes"],
                                    gpus_per_node=d["gpus_per_node"], cpu_only=d["cpu_only"])

    def selection(self) -> estimate_board.Selection:
        return estimate_board.Selection(**self.filters())


class CodeSerializer(serializers.Serializer[Any]):
    code = serializers.CharField()
    values = serializers.DictField()


class PickSerializer(serializers.Serializer[Any]):
    candidate = CandidateSerializer()
    evidence = serializers.CharField(help_text="the lowest rung its figures stand on")
    stability = serializers.ChoiceField(
        choices=VERDICTS,
        help_text="its bandwidth over the day, from the platform's re-tests (its worst node)")
    worst_hours = serializers.ListField(child=serializers.IntegerField())
    worst = AtHoursSerializer(allow_null=True, help_text=(
        "the job at its worst hours, when they make it slower: what the verdict ranks on"))
    checks = CodeSerializer(many=True, help_text=(
        "what to check before renting, as codes (contract/outcomes.py CHECKS)"))
    checks_text = serializers.ListField(child=serializers.CharField())
    reason = CodeSerializer(allow_null=True, help_text=(
        "why to avoid it (contract/outcomes.py AVOID); null for a pick"))
    text = serializers.CharField(help_text="the sentence, in the request's language")


class RecommendationSerializer(serializers.Serializer[Any]):
    workload = EstimateWorkloadEchoSerializer()
    rank_by = serializers.CharField()
    picks = PickSerializer(many=True, help_text="the best candidates, best first")
    avoid = PickSerializer(many=True)
    unknown = CandidateSerializer(many=True, help_text="candidates without the figures the job "
                                                       "needs, each with why (skipped_code)")
    summary = serializers.CharField(allow_blank=True)
