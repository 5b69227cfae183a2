"""A node's stability across the platform's re-tests, and its provider's pauses."""

from __future__ import annotations

from typing import Any

from django.conf import settings
from rest_framework import serializers

from api.serializers import FindingSerializer
from board import stability


class StabilityFigureSerializer(serializers.Serializer[Any]):
    metric = serializers.CharField()
    verdict = serializers.ChoiceField(choices=stability.VERDICTS)
    badge = serializers.CharField(help_text="the verdict in words, in the request's language")
    retests = serializers.IntegerField(help_text="re-tests with a figure in the window")
    hours = serializers.IntegerField(help_text="distinct hours of the day they ran at")
    missed = serializers.IntegerField(help_text="re-tests the node missed or refused")
    cv = serializers.FloatField(allow_null=True)
    hour_ratio = serializers.FloatField(allow_null=True,
                                        help_text="worst hour's median / best hour's (<= 1)")
    worst_hours = serializers.ListField(child=serializers.IntegerField())
    by_hour = serializers.DictField(child=serializers.FloatField(),
                                    help_text='hour of the day ("20") -> median')
    paused_share = serializers.FloatField()
    recurring_pause_hour = serializers.IntegerField(allow_null=True)


class RetestSerializer(serializers.Serializer[Any]):
    due_at = serializers.DateTimeField()
    status = serializers.CharField()
    reason = serializers.CharField(allow_blank=True)
    job = serializers.IntegerField(allow_null=True)


class PauseSerializer(serializers.Serializer[Any]):
    start = serializers.DateTimeField()
    end = serializers.DateTimeField()
    reason = serializers.CharField(allow_blank=True)


class NodeStabilitySerializer(serializers.Serializer[Any]):
    node = serializers.IntegerField()
    window_days = serializers.IntegerField()
    paused_now = PauseSerializer(allow_null=True)
    figures = StabilityFigureSerializer(many=True)
    diagnosis = FindingSerializer(many=True)
    retests = RetestSerializer(many=True, help_text="past re-tests, newest first (the plan "
                                                    "ahead is never shown)")
    pauses = PauseSerializer(many=True)


class PauseRequestSerializer(serializers.Serializer[Any]):
    hours = serializers.FloatField(min_value=0.1, max_value=float(settings.RETEST_MAX_PAUSE_HOURS))
    reason = serializers.CharField(max_length=255, required=False, allow_blank=True, default="")
