"""A worker whose figures the platform will not store ends its run as failed, with the
platform's reason, at once: not a run left running until its lease runs out."""

from __future__ import annotations

from typing import Any

import pytest

from benchmarks.probes import PROBES
from benchmarks.probes.noop import NoopProbe
from contract.sample import Sample, single
from jobs.models import Run
from jobs.models import Sample as StoredSample
from jobs.services import submission
from workers.host.api_client import NodeApi
from workers.host.execution import execute_run


class TwoHoursNoop(NoopProbe):
    """A probe whose figure is outside its metric's range (a bug, or an interval that does
    not hold its median as the disk fault lab once sent)."""

    def run(self) -> list[Sample]:
        return [single("noop.duration", 7200.0, 1)]


@pytest.mark.django_db(transaction=True)
def test_a_refused_result_fails_the_run_with_the_platform_s_reason(
        live_server: Any, enrol_node: Any, buyer: Any, monkeypatch: Any) -> None:
    node = enrol_node("hz-refused", api_url=live_server.url)
    job, _ = submission.submit(buyer.user, [node.node.pk], "noop")
    run = job.runs.get()
    monkeypatch.setitem(PROBES, "noop", TwoHoursNoop)
    api = NodeApi(live_server.url, node.api_key, timeout=10)
    assert execute_run(api, run.pk, max_claim_wait=5, inventory_of=dict) == "failed"
    run = Run.objects.get(pk=run.pk)
    assert run.status == "failed"
    assert run.error.startswith("the platform refused this run's figures: ")
    assert "7200 s is outside the plausible range 0..3600 for noop.duration" in run.error
    assert not StoredSample.objects.filter(run=run).exists()
