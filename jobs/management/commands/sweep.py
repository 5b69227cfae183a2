"""One pass of the sweeper now (Celery beat runs it every SWEEP_INTERVAL_SECONDS), timed.

For operators (what would the next pass do?) and for `make bench`, which times the pass at
each fleet size: ``--passes 3`` prints each pass's seconds and what it did, as JSON lines.
"""

from __future__ import annotations

import json
import time
from dataclasses import asdict
from typing import Any

from django.core.management.base import BaseCommand

from jobs.services import sweeper


class Command(BaseCommand):
    help = "Run the sweeper now: liveness, expired leases, budgets, republishing; timed."

    def add_arguments(self, parser: Any) -> None:
        parser.add_argument("--passes", type=int, default=1)

    def handle(self, *args: Any, **opts: Any) -> None:
        for _ in range(max(1, opts["passes"])):
            started = time.perf_counter()
            report = sweeper.sweep()
            seconds = time.perf_counter() - started
            self.stdout.write(json.dumps({"seconds": round(seconds, 4), **asdict(report)}))
