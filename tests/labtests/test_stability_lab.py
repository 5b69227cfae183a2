"""Stable or shared, on shaped links: a node whose link the lab slows in the evening is named
with the right hours, a node on a steady link is called stable.

The test holds the scheduler's clock: each round it sets the hour, shapes the shared node's
link for that hour (tc tbf, as a neighbour's evening traffic would leave it), lets the
platform's re-tests of both nodes run through the real workers, and moves on; six hours of
one day take a few minutes.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from datetime import timedelta
from pathlib import Path
from typing import Any

import pytest
from django.utils import timezone

from board import stability_board
from fleet.models import Node, Provider, Region
from jobs.models import Retest, Run
from jobs.services import retests
from lab.procs import wait_for
from lab.stack import LabStack
from tests.labtests.labs import lab_of

pytestmark = [
    pytest.mark.slow,
    pytest.mark.serial,
    pytest.mark.skipif(os.geteuid() != 0, reason="the lab needs root (ip netns, tc)"),
]

DAY_MBIT, EVENING_MBIT = 1000, 300
HOURS = (3, 9, 14, 20, 21, 22)


@pytest.fixture
def lab(live_server: Any, private_redis: Any, provider: Provider, provider_owner: Any,
        hangzhou: Region, shenzhen: Region, tmp_path: Path) -> Iterator[LabStack]:
    # Each node its own region's reference, so the two re-tests of a round run side by side.
    yield from lab_of({"name": "st", "hosts": [
        {"name": "shared", "region": "hangzhou", "provider": provider.name, "rate_mbit": DAY_MBIT},
        {"name": "steady", "region": "shenzhen", "provider": provider.name, "rate_mbit": DAY_MBIT},
        {"name": "refhz", "kind": "reference", "region": "hangzhou"},
        {"name": "refsz", "kind": "reference", "region": "shenzhen"}]},
        live_server, private_redis, provider_owner, tmp_path)


def test_the_evening_slowdown_is_named_with_its_hours_and_a_steady_link_is_stable(
        lab: LabStack, settings: Any) -> None:
    settings.RETEST_PER_DAY = 0  # the rounds below are the schedule
    settings.RETEST_PROFILE = "quick"  # the re-test's two-second iperf3 tests
    settings.RETEST_SUITE = "network"  # no fio throttle in the lab: links only
    start = timezone.localtime(timezone.now() - timedelta(days=2)).replace(
        hour=0, minute=0, second=0, microsecond=0)
    nodes = {name: Node.objects.get(pk=lab.nodes[name].node_id) for name in ("shared", "steady")}
    for hour in HOURS:
        now = start + timedelta(hours=hour, minutes=20)
        lab.lab.shape("shared", EVENING_MBIT if hour >= 20 else DAY_MBIT)
        made = [Retest.objects.create(node=n, due_at=now) for n in nodes.values()]
        assert retests.tick(now).submitted == 2
        jobs = [Retest.objects.get(pk=r.pk).job_id for r in made]
        wait_for(lambda jobs=jobs: not Run.objects.filter(job_id__in=jobs).exclude(
            status__in=Run.FINISHED).exists(), 180, f"the re-tests at {hour}:20", interval=0.5)
        assert retests.tick(now + timedelta(minutes=2)).done == 2, [
            (r.status, r.reason) for r in Retest.objects.filter(pk__in=[m.pk for m in made])]
    found = stability_board.figures([n.pk for n in nodes.values()], ["network.tcp_throughput"])
    shared = found[nodes["shared"].pk]["network.tcp_throughput"]
    steady = found[nodes["steady"].pk]["network.tcp_throughput"]
    print(f"\nshared by hour: {shared.by_hour}\nsteady by hour: {steady.by_hour}")
    assert shared.verdict == "varies-by-hour" and shared.worst_hours == [20, 21, 22]
    assert steady.verdict == "stable", steady
    finding = stability_board.finding("network.tcp_throughput", shared)
    assert finding is not None and "worst at 20:00-23:00: likely shared bandwidth" in finding.verdict
    assert stability_board.finding("network.tcp_throughput", steady) is None
