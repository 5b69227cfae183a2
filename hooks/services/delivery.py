"""Sending one delivery: claim it, POST it signed, record the outcome, schedule the retry.

The claim is a conditional UPDATE (one worker per attempt, however often the delivery was
enqueued); the POST happens outside any transaction; a failure waits a backoff that grows
with each attempt (hooks/data/delivery.yaml) and the last one marks the delivery failed.
"""

from __future__ import annotations

import http.client
import json
import logging
import socket
import time
from dataclasses import dataclass
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any

from django.conf import settings
from django.db.models import F, Q
from django.utils import timezone

from contract import rules
from hooks.models import Delivery, Webhook
from hooks.services import signature, targets

log = logging.getLogger(__name__)

BOUNDS = rules.load_bounds(Path(__file__).resolve().parents[1] / "data" / "delivery.yaml")
MAX_ATTEMPTS = int(BOUNDS["max_attempts"].value)
FIRST_RETRY_S = BOUNDS["first_retry_s"].value
BACKOFF_FACTOR = BOUNDS["backoff_factor"].value
MAX_DELAY_S = BOUNDS["max_delay_s"].value
TIMEOUT_S = BOUNDS["timeout_s"].value
CLAIM_S = BOUNDS["claim_s"].value
REQUEUE_AFTER_S = BOUNDS["requeue_after_s"].value
DISABLE_AFTER_FAILED = int(BOUNDS["disable_after_failed"].value)
# What of a receiver's refusal the buyer's log keeps.
ERROR_CHARS = 200
USER_AGENT = "bench-webhooks/1"


def retry_delay(attempts: int) -> float:
    """Seconds to wait after the ``attempts``-th failed attempt."""
    return float(min(MAX_DELAY_S, FIRST_RETRY_S * BACKOFF_FACTOR ** (attempts - 1)))


@dataclass(frozen=True)
class Outcome:
    status_code: int | None
    error: str
    ms: int

    @property
    def ok(self) -> bool:
        return self.status_code is not None and 200 <= self.status_code < 300


def attempt(delivery_id: int, now: datetime | None = None) -> str | None:
    """One attempt at a due delivery; its status after, or None when it was not due (sent
    already, failed for good, or another worker holds it)."""
    now = now or timezone.now()
    claimed = Delivery.objects.filter(
        pk=delivery_id, status=Delivery.Status.PENDING, next_attempt_at__lte=now,
        webhook__active=True).update(next_attempt_at=now + timedelta(seconds=CLAIM_S),
                                     attempts=F("attempts") + 1)
    if claimed != 1:
        return None
    delivery = Delivery.objects.select_related("webhook").get(pk=delivery_id)
    outcome = post(delivery)
    return record(delivery, outcome, timezone.now())


def body_of(delivery: Delivery) -> bytes:
    return json.dumps({"id": delivery.pk, **delivery.payload}, separators=(",", ":"),
                      sort_keys=True).encode()


def post(delivery: Delivery) -> Outcome:
    started = time.monotonic()
    body = body_of(delivery)
    headers = {"Content-Type": "application/json", "User-Agent": USER_AGENT,
               "X-Bench-Event": delivery.event, "X-Bench-Delivery": str(delivery.pk),
               "X-Bench-Signature": signature.header(delivery.webhook.secret, int(time.time()),
                                                     body)}
    try:
        target = targets.resolve(delivery.webhook.url)
        connection = _connection(target)
        try:
            connection.request("POST", target.path, body=body, headers=headers)
            response = connection.getresponse()
            answer = response.read(ERROR_CHARS).decode(errors="replace")
        finally:
            connection.close()
    except targets.Refused as exc:
        return Outcome(None, f"refused: {exc}", _ms(started))
    except (OSError, http.client.HTTPException) as exc:
        return Outcome(None, f"{type(exc).__name__}: {exc}"[:500], _ms(started))
    error = "" if 200 <= response.status < 300 else f"HTTP {response.status}: {answer}"
    return Outcome(response.status, error[:500], _ms(started))


def _connection(target: targets.Target) -> http.client.HTTPConnection:
    """A connection to the address that was checked, whatever the name resolves to by now;
    the name stays the Host header and the certificate's name. Redirects are not followed
    (http.client does not): a 3xx is an answer, and a failure."""
    kind = http.client.HTTPSConnection if target.scheme == "https" else http.client.HTTPConnection
    connection = kind(target.host, target.port, timeout=TIMEOUT_S)

    def pinned(address: tuple[str, int], timeout: Any = TIMEOUT_S,
               source: Any = None) -> socket.socket:
        return socket.create_connection((target.address, target.port), timeout, source)

    connection._create_connection = pinned  # type: ignore[attr-defined]
    return connection


def _ms(started: float) -> int:
    return round((time.monotonic() - started) * 1000)


def record(delivery: Delivery, outcome: Outcome, now: datetime) -> str:
    entry = {"at": now.isoformat(), "status_code": outcome.status_code, "error": outcome.error,
             "ms": outcome.ms}
    delivery.history = [*delivery.history, entry][-MAX_ATTEMPTS:]
    delivery.last_status_code, delivery.last_error = outcome.status_code, outcome.error
    if outcome.ok:
        delivery.status, delivery.delivered_at = Delivery.Status.DELIVERED, now
    elif delivery.attempts >= MAX_ATTEMPTS:
        delivery.status = Delivery.Status.FAILED
    else:
        delivery.next_attempt_at = now + timedelta(seconds=retry_delay(delivery.attempts))
        delivery.enqueued_at = None  # the sweeper hands it to a worker when it is due
    delivery.save(update_fields=["history", "last_status_code", "last_error", "status",
                                 "delivered_at", "next_attempt_at", "enqueued_at"])
    if not outcome.ok:
        log.info("webhook %s delivery %s attempt %s failed: %s", delivery.webhook_id,
                 delivery.pk, delivery.attempts, outcome.error)
    _tally(delivery, now)
    return delivery.status


def _tally(delivery: Delivery, now: datetime) -> None:
    """A delivery done counts for its webhook: one delivered starts the count of failed ones
    afresh; DISABLE_AFTER_FAILED failed in a row turn the webhook off, with the reason, so a
    receiver that is gone for good stops costing a worker eight requests per event. Counted
    in the database: two workers finishing together both count."""
    hook = Webhook.objects.filter(pk=delivery.webhook_id)
    if delivery.status == Delivery.Status.DELIVERED:
        hook.filter(failed_in_a_row__gt=0).update(failed_in_a_row=0)
    elif delivery.status == Delivery.Status.FAILED:
        hook.update(failed_in_a_row=F("failed_in_a_row") + 1)
        reason = (f"turned off: the last {DISABLE_AFTER_FAILED} deliveries each failed "
                  f"{MAX_ATTEMPTS} attempts, none delivered between; the last error: "
                  f"{delivery.last_error}")[:255]
        if hook.filter(active=True, failed_in_a_row__gte=DISABLE_AFTER_FAILED).update(
                active=False, disabled_reason=reason, disabled_at=now):
            log.warning("webhook %s turned off: %s", delivery.webhook_id, reason)


def due(now: datetime, limit: int = 500) -> list[int]:
    """Pending deliveries that are due and no worker was asked about lately, marked asked:
    new retries, and what a lost message or a dead worker left."""
    stale = now - timedelta(seconds=REQUEUE_AFTER_S)
    ids = list(Delivery.objects.filter(
        Q(enqueued_at__isnull=True) | Q(enqueued_at__lt=stale),
        status=Delivery.Status.PENDING, next_attempt_at__lte=now, webhook__active=True)
        .order_by("next_attempt_at").values_list("pk", flat=True)[:limit])
    Delivery.objects.filter(pk__in=ids).update(enqueued_at=now)
    return ids


def prune(now: datetime) -> int:
    """Deliveries done (delivered or failed) longer ago than WEBHOOK_LOG_KEEP_DAYS: the log is
    for a buyer looking into what happened lately, not an archive of every event."""
    before = now - timedelta(days=settings.WEBHOOK_LOG_KEEP_DAYS)
    deleted, _ = Delivery.objects.filter(
        Q(status=Delivery.Status.DELIVERED, delivered_at__lt=before)
        | Q(status=Delivery.Status.FAILED, created_at__lt=before)).delete()
    return deleted
