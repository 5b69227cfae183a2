"""A buyer's webhooks and their delivery log (/api/v1/webhooks)."""

from __future__ import annotations

from typing import Any

from rest_framework import serializers

from hooks.models import Delivery, Webhook
from hooks.services import watch
from hooks.services.events import EVENTS, WATCHED


class WebhookRequestSerializer(serializers.Serializer[Any]):
    url = serializers.CharField(max_length=2000, help_text="https:// in production; where "
                                "the platform POSTs each event, signed")
    # A plain string list: an unknown event is the service's 400, with the list of events.
    events = serializers.ListField(child=serializers.CharField(max_length=32),
                                   max_length=len(EVENTS),
                                   help_text=f"any of: {', '.join(EVENTS)}")
    nodes = serializers.ListField(
        child=serializers.IntegerField(min_value=1), required=False, default=list,
        max_length=watch.MAX_NODES,
        help_text=f"node ids to watch for {', '.join(sorted(WATCHED))} (needed with it, at "
                  f"most {watch.MAX_NODES}): nodes you may see")


class WebhookChangeSerializer(serializers.Serializer[Any]):
    active = serializers.BooleanField(help_text="true switches it on again (and forgets why "
                                      "it was turned off); false pauses it")


class WebhookSerializer(serializers.ModelSerializer[Webhook]):
    nodes = serializers.ListField(child=serializers.IntegerField(), read_only=True)

    class Meta:
        model = Webhook
        fields = ["id", "url", "events", "nodes", "active", "disabled_reason", "disabled_at",
                  "created_at"]
        read_only_fields = fields


class NewWebhookSerializer(WebhookSerializer):
    secret = serializers.CharField(help_text="the HMAC-SHA256 key of X-Bench-Signature: shown "
                                   "here once, keep it")

    class Meta(WebhookSerializer.Meta):
        fields = [*WebhookSerializer.Meta.fields, "secret"]


class SecretSerializer(serializers.Serializer[Any]):
    secret = serializers.CharField(help_text="the new HMAC-SHA256 key, shown this once: the "
                                   "old one signs nothing from now on")


class AttemptSerializer(serializers.Serializer[Any]):
    at = serializers.DateTimeField()
    status_code = serializers.IntegerField(allow_null=True)
    error = serializers.CharField(allow_blank=True)
    ms = serializers.IntegerField()


class DeliverySerializer(serializers.ModelSerializer[Delivery]):
    history = AttemptSerializer(many=True, help_text="every attempt, oldest first")

    class Meta:
        model = Delivery
        fields = ["id", "event", "status", "attempts", "payload", "last_status_code",
                  "last_error", "next_attempt_at", "created_at", "delivered_at", "history"]
