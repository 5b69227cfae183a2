"""The samples table's months: made through the months ahead, and rolled up past the keep.

The sweeper does both on every pass (jobs.services.partitions); this is for operators and
for bulk loads, which need a month made before its rows arrive: ``--since 2025-12`` makes
every month from then on, then rolls up what is due, and prints what it did.
"""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

from django.core.management.base import BaseCommand, CommandError
from django.utils import timezone

from jobs.services import partitions


class Command(BaseCommand):
    help = "Make the samples table's months (from --since on) and roll up the months past the keep."

    def add_arguments(self, parser: Any) -> None:
        parser.add_argument("--since", default="", help="the first month to make, e.g. 2025-12")

    def handle(self, *args: Any, **opts: Any) -> None:
        now = timezone.now()
        made = 0
        if opts["since"]:
            try:
                since = datetime.strptime(opts["since"], "%Y-%m").replace(tzinfo=UTC)
            except ValueError as exc:
                raise CommandError(f"--since {opts['since']!r}: give a month, e.g. 2025-12") \
                    from exc
            month, there = partitions.Month.of(since), partitions.partitions()
            while month <= partitions.Month.of(now):
                if month not in there:
                    partitions.make(month)
                    made += 1
                month = month.plus(1)
        made += partitions.ensure(now)
        rolled = partitions.roll_up(now)
        self.stdout.write(f"{made} months made, {rolled} rolled up; "
                          f"{len(partitions.partitions())} months in all")
