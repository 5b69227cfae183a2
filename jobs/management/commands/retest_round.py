"""Run one round of the platform's re-tests now, as if the scheduler's clock read ``--at``.

For the demo and for operators: the demo compresses a day into a few minutes, one round per
hour it shows. The re-tests are created due at that time, submitted through the scheduler's
own path (jobs.services.retests.tick), and with ``--wait`` settled once their runs finish.
"""

from __future__ import annotations

import json
import time
from datetime import datetime
from typing import Any

from django.core.management.base import BaseCommand, CommandError
from django.db import transaction
from django.test import override_settings
from django.utils import timezone

from fleet.models import Node
from jobs.models import Retest, Run
from jobs.services import retests


class Command(BaseCommand):
    help = "Create and run re-tests of the given nodes due at --at (ISO time, site time zone)."

    def add_arguments(self, parser: Any) -> None:
        parser.add_argument("--at", required=True, help="e.g. 2026-12-01T20:20")
        parser.add_argument("--nodes", required=True, help="node ids, comma-separated")
        parser.add_argument("--suite", default="", help="default: RETEST_SUITE")
        parser.add_argument("--profile", default="", help="default: RETEST_PROFILE")
        parser.add_argument("--wait", type=float, default=0.0,
                            help="seconds to wait for the runs, then settle them")

    def handle(self, *args: Any, **opts: Any) -> None:
        try:
            at = timezone.make_aware(datetime.fromisoformat(opts["at"]))
        except ValueError as exc:
            raise CommandError(f"--at {opts['at']!r}: give an ISO time, e.g. 2026-12-01T20:20"
                               ) from exc
        ids = [int(i) for i in str(opts["nodes"]).split(",") if i.strip()]
        nodes = list(Node.objects.filter(pk__in=ids, status=Node.Status.ACTIVE))
        if len(nodes) != len(ids):
            raise CommandError(f"not every node of {ids} is enrolled and active")
        overrides = {k: v for k, v in (("RETEST_SUITE", opts["suite"]),
                                       ("RETEST_PROFILE", opts["profile"]),
                                       ("RETEST_PER_DAY", 0)) if v != ""}
        # Made and started in one transaction: the scheduler's own tick (every minute, on
        # the real clock) would see a re-test due hours ago as one its stopped scheduler let
        # pass, and skip it (the demo's last round once lost its shared node's re-test so,
        # and its stability verdict with it).
        with transaction.atomic():
            made = [Retest.objects.create(node=n, due_at=at) for n in nodes]
            with override_settings(**overrides):
                retests.tick(at)
        jobs = [j for j in Retest.objects.filter(pk__in=[r.pk for r in made])
                .values_list("job_id", flat=True) if j]
        deadline = time.monotonic() + float(opts["wait"])
        while opts["wait"] and time.monotonic() < deadline and Run.objects.filter(
                job_id__in=jobs).exclude(status__in=Run.FINISHED).exists():
            time.sleep(0.5)
        if opts["wait"]:
            retests.settle()
        self.stdout.write(json.dumps({str(r.node_id): {"status": r.status, "reason": r.reason}
                                      for r in Retest.objects.filter(pk__in=[m.pk for m in made])}))
