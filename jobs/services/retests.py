"""The platform's scheduled re-tests: a short canonical profile run on every enrolled node at
random hours of each day, so that a figure's stability over the day can be judged.

Every tick (Celery beat, RETEST_TICK_SECONDS) does three things with the time it is given
(``now``: the scheduler reads a clock, so a test can drive it through a week in minutes):

- ``plan``: each active node gets RETEST_PER_DAY re-tests per local day, at distinct random
  hours and random minutes, drawn from the operating system's randomness. The plan is kept
  in the database and never shown to the node or its provider before it is due: a host that
  knew when it would be tested could save its neighbours' traffic for those minutes.
- ``run_due``: a due re-test is claimed (a conditional UPDATE: two schedulers never submit
  one twice) and then submitted as the platform's own job, or: skipped as ``paused`` while
  the provider has paused re-tests (the pauses are judged too), ``missed`` while the node is
  offline (it counts against the node), or deferred while a buyer's job is on the node
  (never measured over a buyer's job; after RETEST_MAX_DEFERRALS it is ``busy``, not
  counted). A provider's own runs do not defer it: a node kept busy by its own provider
  misses its re-test.
- ``settle``: a submitted re-test whose run finished is ``done`` or, failed or refused by
  intake, ``missed``; failed while one of the node's references was down (its agent
  silent, as the platform saw when the failure came in: ``Run.fault``), ``skipped`` and
  planned again: the platform's failure never counts against the node.
"""

from __future__ import annotations

import logging
import random
import secrets
from dataclasses import dataclass
from datetime import datetime, timedelta

from django.conf import settings
from django.contrib.auth.models import User
from django.db.models.functions import TruncDate
from django.utils import timezone

from config import isolated
from config.errors import DomainError
from fleet.models import Node, RetestPause
from fleet.services import generation
from jobs.models import Retest, Run
from jobs.services import submission

log = logging.getLogger(__name__)
PLATFORM_USER = "platform-retests"


@dataclass
class Tick:
    planned: int = 0
    submitted: int = 0
    paused: int = 0
    missed: int = 0
    deferred: int = 0
    busy: int = 0
    skipped: int = 0
    done: int = 0


def tick(now: datetime, rng: random.Random | None = None) -> Tick:
    out = Tick()
    out.planned = plan(now, rng)
    run_due(now, out)
    settle(out)
    return out


def plan(now: datetime, rng: random.Random | None = None) -> int:
    """Plan today's and tomorrow's re-tests (local days) for every active node that has none."""
    rng = rng or secrets.SystemRandom()
    per_day = settings.RETEST_PER_DAY
    local = timezone.localtime(now)
    days = [local.replace(hour=0, minute=0, second=0, microsecond=0) + timedelta(days=d)
            for d in (0, 1)]
    # One query for the days already planned, whatever the size of the fleet.
    planned = set(Retest.objects.filter(due_at__gte=days[0], due_at__lt=days[-1] + timedelta(days=1))
                  .annotate(day=TruncDate("due_at")).values_list("node_id", "day").distinct())
    created = []
    # A buyer's trial agent answers to its buyer only: the platform re-tests the node itself.
    for node_id in Node.objects.filter(status=Node.Status.ACTIVE, trial_of__isnull=True
                                       ).values_list("pk", flat=True):
        for day in days:
            if (node_id, day.date()) in planned:
                continue
            for hour in sorted(rng.sample(range(24), min(per_day, 24))):
                due = day + timedelta(hours=hour, minutes=rng.randrange(60),
                                      seconds=rng.randrange(60))
                if due > now:
                    created.append(Retest(node_id=node_id, due_at=due))
    Retest.objects.bulk_create(created)
    return len(created)


def platform_user() -> User:
    user, _ = User.objects.get_or_create(username=PLATFORM_USER,
                                         defaults={"is_active": False})
    return user


def run_due(now: datetime, out: Tick | None = None) -> Tick:
    out = out or Tick()
    stale = now - timedelta(seconds=settings.RETEST_STALE_SECONDS)
    # The scheduler was down when these were due: measuring them all now would be one burst
    # at one hour, and the node is not to blame.
    out.skipped += Retest.objects.filter(status=Retest.Status.PLANNED, due_at__lt=stale).update(
        status=Retest.Status.SKIPPED, reason="the platform's scheduler was not running",
        settled_at=now)
    def start(retest_id: int) -> None:
        # The re-test's row only: FOR UPDATE over the join locked the node's row too, and
        # skipped the re-test whenever anything held that row (a heartbeat's update), so it
        # stayed planned until the stale rule skipped it (the demo lost a round so, and its
        # stability verdicts with it).
        retest = (Retest.objects.select_for_update(skip_locked=True, of=("self",))
                  .select_related("node").filter(pk=retest_id, status=Retest.Status.PLANNED)
                  .first())
        if retest is not None:
            _start(retest, now, out)

    def failed(retest_id: int, exc: Exception) -> None:
        # The platform's fault, not the node's: skipped (never counted against it), and not
        # tried again every tick.
        out.skipped += Retest.objects.filter(pk=retest_id, status=Retest.Status.PLANNED).update(
            status=Retest.Status.SKIPPED, settled_at=now,
            reason=f"the platform could not start it: {type(exc).__name__}: {exc}"[:255])

    due = list(Retest.objects.filter(status=Retest.Status.PLANNED, due_at__lte=now)
               .order_by("due_at").values_list("pk", flat=True)[:500])
    isolated.each(due, start, "re-test", failed)
    return out


def _start(retest: Retest, now: datetime, out: Tick) -> None:
    node = retest.node
    pause = RetestPause.objects.filter(node=node, start__lte=now, end__gt=now).first()
    if node.status != Node.Status.ACTIVE:
        _settle(retest, Retest.Status.SKIPPED, "the node was revoked", now)
        out.skipped += 1
    elif pause is not None:
        _settle(retest, Retest.Status.PAUSED, f"paused by the provider: {pause.reason}"[:255], now)
        out.paused += 1
    elif not node.online:
        _settle(retest, Retest.Status.MISSED, "the node was offline", now)
        out.missed += 1
    # Only a buyer's run the node is actually running defers it: a queued one the host never
    # claims (a sock-puppet buyer's job) would otherwise defer every re-test to "busy".
    elif Run.objects.filter(node=node, status=Run.Status.RUNNING,
                            requested_by=Run.RequestedBy.BUYER).exists():
        if retest.deferred >= settings.RETEST_MAX_DEFERRALS:
            _settle(retest, Retest.Status.BUSY, "a buyer's job kept the node busy", now)
            out.busy += 1
        else:
            retest.due_at = now + timedelta(seconds=settings.RETEST_DEFER_SECONDS)
            retest.deferred += 1
            retest.save(update_fields=["due_at", "deferred"])
            out.deferred += 1
    else:
        try:
            job, _ = submission.submit(platform_user(), [node.pk], settings.RETEST_SUITE,
                                       {"seed": secrets.randbelow(2**31)},
                                       profile=settings.RETEST_PROFILE, by_platform=True)
        except DomainError as exc:  # its queue is full: the node did not take the re-test
            _settle(retest, Retest.Status.MISSED, f"not accepted: {exc}"[:255], now)
            out.missed += 1
            return
        retest.status, retest.job = Retest.Status.SUBMITTED, job
        retest.save(update_fields=["status", "job"])
        out.submitted += 1


def _settle(retest: Retest, status: str, reason: str, now: datetime) -> None:
    retest.status, retest.reason, retest.settled_at = status, reason, now
    retest.save(update_fields=["status", "reason", "settled_at"])


def settle(out: Tick | None = None) -> Tick:
    out = out or Tick()
    submitted = Retest.objects.filter(status=Retest.Status.SUBMITTED, job__isnull=False)

    def settle_one(retest: Retest) -> None:
        runs = list(Run.objects.filter(job_id=retest.job_id).values_list("status", "error", "fault"))
        if not runs or any(status not in Run.FINISHED for status, _, _ in runs):
            return
        ok = all(status == Run.Status.SUCCEEDED for status, _, _ in runs)
        error, fault = ("", "") if ok else next((e, f) for s, e, f in runs if s != Run.Status.SUCCEEDED)
        if fault == "reference":
            _platform_failed(retest, error, out)
            return
        updated = Retest.objects.filter(pk=retest.pk, status=Retest.Status.SUBMITTED).update(
            status=Retest.Status.DONE if ok else Retest.Status.MISSED, reason=error[:255],
            settled_at=timezone.now())
        if updated:
            generation.changed()  # the node's stability on the board counts it
            if ok:
                out.done += 1
            else:
                out.missed += 1
                log.info("re-test %s of node %s missed: %s", retest.pk, retest.node_id, error)

    isolated.each(list(submitted.select_related("job")[:500]), settle_one, "settling re-test")
    return out


def _platform_failed(retest: Retest, error: str, out: Tick) -> None:
    """A re-test whose run failed while the platform's reference was down: skipped (never
    counted against the node) and planned again at a random time in the next hours."""
    now = timezone.now()
    updated = Retest.objects.filter(pk=retest.pk, status=Retest.Status.SUBMITTED).update(
        status=Retest.Status.SKIPPED, settled_at=now,
        reason=f"the platform's reference was down: planned again ({error})"[:255])
    if updated:
        rng = secrets.SystemRandom()
        Retest.objects.create(node_id=retest.node_id, due_at=now + timedelta(
            seconds=rng.uniform(*settings.RETEST_AGAIN_AFTER_SECONDS)))
        out.skipped += 1
        log.info("re-test %s of node %s skipped, its reference was down", retest.pk,
                 retest.node_id)


def pause(node: Node, hours: float, reason: str, user: User | None, now: datetime | None = None
          ) -> RetestPause:
    """The provider pauses re-tests of its node for ``hours`` (maintenance); shown on the board."""
    now = now or timezone.now()
    return RetestPause.objects.create(node=node, start=now, end=now + timedelta(hours=hours),
                                      reason=reason, created_by=user)


def resume(node: Node, now: datetime | None = None) -> int:
    """End the node's current pauses now (they stay in the record, as long as they lasted)."""
    now = now or timezone.now()
    return RetestPause.objects.filter(node=node, start__lte=now, end__gt=now).update(end=now)
