"""A probe that measures nothing, kept for benchmarking the platform and for tests."""

from __future__ import annotations

import time

from benchmarks import runner
from benchmarks.probes.base import Probe
from contract import metrics
from contract.sample import Sample, summarise


class NoopProbe(Probe):
    name = "noop"
    produces = metrics.family("noop")

    def run(self) -> list[Sample]:
        # Wall-clock start, for the platform's dispatch-latency benchmark (same machine).
        started_at = time.time()
        started = time.monotonic()
        seconds = self.param("noop_seconds")
        steps = max(1, int(seconds))
        for step in range(steps):
            self.ctx.report(self.name, step + 1, steps)
            time.sleep(seconds / steps)
        command_seconds = self.param("noop_command_seconds")
        if command_seconds:
            runner.run(["sleep", f"{command_seconds:g}"], timeout=command_seconds + 60)
        return [summarise("noop.duration", [time.monotonic() - started],
                          {"started_at": started_at})]
