"""A buyer's webhooks and the outbox of their deliveries."""

from django.conf import settings
from django.db import models


class Webhook(models.Model):
    owner = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.CASCADE,
                              related_name="webhooks")
    url = models.URLField(max_length=2000)
    events = models.JSONField()  # names from hooks.services.events.EVENTS
    # The node ids whose figures it watches (node.figures_changed), each one the owner could
    # see when it was registered; at most hooks/data/watch.yaml max_nodes.
    nodes = models.JSONField(default=list, blank=True)
    # The HMAC key: kept as given (a signature needs it), shown to the buyer only at creation.
    secret = models.CharField(max_length=64)
    active = models.BooleanField(default=True)
    # Deliveries that each spent every attempt, with none delivered since: at
    # hooks/data/delivery.yaml disable_after_failed the platform turns the webhook off and
    # says why; the owner turns it on again (PATCH active), which starts the count afresh.
    failed_in_a_row = models.PositiveIntegerField(default=0)
    disabled_reason = models.CharField(max_length=255, blank=True)
    disabled_at = models.DateTimeField(null=True, blank=True)
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        indexes = [models.Index(fields=["owner", "active"])]


class Delivery(models.Model):
    """One event for one webhook: written in the transaction of the event itself, so a worker
    that is down loses nothing (the sweeper sends what is due)."""

    class Status(models.TextChoices):
        PENDING = "pending"
        DELIVERED = "delivered"
        FAILED = "failed"  # every attempt spent

    webhook = models.ForeignKey(Webhook, on_delete=models.CASCADE, related_name="deliveries")
    event = models.CharField(max_length=32)
    # What the event is about ("job:12", "certificate:7"): one delivery per webhook, event and
    # subject, however often the event is reported (two runs of a job ending together).
    subject = models.CharField(max_length=64)
    payload = models.JSONField()
    status = models.CharField(max_length=16, choices=Status.choices, default=Status.PENDING)
    attempts = models.PositiveIntegerField(default=0)
    next_attempt_at = models.DateTimeField()
    # When a worker was last asked to send it: the sweeper asks again only after a while.
    enqueued_at = models.DateTimeField(null=True, blank=True)
    last_status_code = models.PositiveIntegerField(null=True, blank=True)
    last_error = models.CharField(max_length=500, blank=True)
    # Every attempt: {"at", "status_code", "error", "ms"}; at most max_attempts entries.
    history = models.JSONField(default=list)
    created_at = models.DateTimeField(auto_now_add=True)
    delivered_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        constraints = [models.UniqueConstraint(fields=["webhook", "event", "subject"],
                                               name="one_delivery_per_webhook_event_subject")]
        indexes = [models.Index(fields=["status", "next_attempt_at"])]
