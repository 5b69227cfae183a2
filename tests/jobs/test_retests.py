"""The platform's scheduled re-tests, driven by a clock the test holds (no waiting hours).

Re-test runs are claimed and reported through the service as a host would; what is checked
is the schedule, what defers or counts against a node, what a provider can and cannot hide,
and the stability verdicts the board and the API then show.
"""

from __future__ import annotations

import io
import json
import random
import threading
import time
from collections.abc import Callable
from datetime import datetime, timedelta
from typing import Any

import pytest
from django.core.management import call_command
from django.db import connection, transaction
from django.test.utils import CaptureQueriesContext
from django.utils import timezone

from board import stability_board
from fleet.models import Node, ReferenceEndpoint, RetestPause
from jobs.models import Retest, Run
from jobs.services import lifecycle, retests, submission
from tests.fixtures import Actor, Enrolled


@pytest.fixture
def clock() -> datetime:
    """Local midnight six days ago: the week of re-tests ends within the stability window."""
    local = timezone.localtime(timezone.now() - timedelta(days=6))
    return local.replace(hour=0, minute=0, second=0, microsecond=0)


@pytest.fixture
def online(enrol_node: Any) -> Callable[[str], Enrolled]:
    def make(name: str) -> Enrolled:
        e = enrol_node(name, address=f"10.0.7.{Node.objects.count() + 2}")
        Node.objects.filter(pk=e.node.pk).update(last_seen_at=timezone.now())
        e.node.refresh_from_db()
        return e
    return make


def report(e: Enrolled, retest: Retest, gbps: float, ok: bool = True,
           claim: lifecycle.Claim | None = None) -> None:
    """The node runs its re-test (``claim``: it has claimed it already) and reports or fails."""
    run = Run.objects.get(job_id=retest.job_id)
    claim = claim or lifecycle.claim(e.node, run.pk)
    samples = [{"metric": "network.tcp_throughput", "value": gbps, "unit": "Gbit/s", "n": 3,
                "p5": gbps * 0.98, "p95": gbps * 1.02, "min": None, "max": None, "cv": 0.01,
                "metadata": {"peer": "ref1"}}]
    lifecycle.finish(e.node, run.pk, claim.attempt.id, ok, samples if ok else [],
                     "" if ok else "iperf3: connection refused", {})


def test_each_node_gets_its_re_tests_at_distinct_random_hours_of_each_day(
        online: Any, clock: datetime, settings: Any) -> None:
    settings.RETEST_PER_DAY = 4
    a, b = online("a"), online("b")
    Node.objects.filter(pk=b.node.pk).update(status=Node.Status.REVOKED)
    assert retests.plan(clock, random.Random(7)) == 8  # today and tomorrow, node a only
    assert retests.plan(clock + timedelta(hours=5), random.Random(8)) == 0  # planned once
    days: dict[object, list[int]] = {}
    for r in Retest.objects.filter(node=a.node):
        local = timezone.localtime(r.due_at)
        days.setdefault(local.date(), []).append(local.hour)
    assert sorted(len(h) for h in days.values()) == [4, 4]
    assert all(len(set(h)) == 4 for h in days.values())
    # Each day its own draw: the schedule cannot be guessed from a node's past days.
    assert retests.plan(clock + timedelta(days=2), random.Random(9)) == 8
    hours = {d: sorted(timezone.localtime(r.due_at).hour for r in Retest.objects.filter(
        node=a.node, due_at__date=(clock + timedelta(days=d)).date())) for d in (0, 2)}
    assert hours[0] != hours[2]


def test_a_due_re_test_is_the_platforms_own_ranked_job_shaped_as_a_buyers(
        online: Any, clock: datetime, settings: Any, buyer: Actor) -> None:
    settings.RETEST_PER_DAY = 0
    e = online("a")
    retest = Retest.objects.create(node=e.node, due_at=clock + timedelta(hours=3))
    assert retests.tick(clock + timedelta(hours=2)).submitted == 0  # not yet due
    assert retests.tick(clock + timedelta(hours=3, minutes=1)).submitted == 1
    retest.refresh_from_db()
    run = Run.objects.get(job_id=retest.job_id)
    assert retest.status == Retest.Status.SUBMITTED and run.ranked
    assert run.requested_by == Run.RequestedBy.PLATFORM
    # The suite and profile buyers ask for most, and a seed as every run has: the host
    # cannot tell an examination from a buyer's run by its spec.
    assert (run.job.suite, run.job.profile) == ("full", "quick")
    claim = lifecycle.claim(e.node, run.pk)
    spec = claim.spec()
    job, _ = submission.submit(buyer.user, [e.node.pk], "full", profile="quick")
    report(e, retest, 0.9, claim=claim)
    assert retests.tick(clock + timedelta(hours=3, minutes=2)).done == 1
    assert Retest.objects.get(pk=retest.pk).status == Retest.Status.DONE
    buyers = lifecycle.claim(e.node, job.runs.get().pk).spec()  # one run at a time: now
    assert set(spec["params"]) == set(buyers["params"]) and spec["suite"] == buyers["suite"]
    assert spec["params"]["seed"] != buyers["params"]["seed"]
    lifecycle.cancel(job)


def test_a_failed_or_offline_re_test_counts_against_the_node(
        online: Any, clock: datetime, settings: Any) -> None:
    settings.RETEST_PER_DAY = 0
    e = online("a")
    failed = Retest.objects.create(node=e.node, due_at=clock + timedelta(hours=1))
    retests.tick(clock + timedelta(hours=1))
    report(e, Retest.objects.get(pk=failed.pk), 0.0, ok=False)
    retests.tick(clock + timedelta(hours=1, minutes=1))
    failed.refresh_from_db()
    assert failed.status == Retest.Status.MISSED and "refused" in failed.reason
    Node.objects.filter(pk=e.node.pk).update(last_seen_at=timezone.now() - timedelta(hours=1))
    offline = Retest.objects.create(node=e.node, due_at=clock + timedelta(hours=2))
    retests.tick(clock + timedelta(hours=2))
    offline.refresh_from_db()
    assert offline.status == Retest.Status.MISSED and offline.reason == "the node was offline"


def test_a_re_test_that_failed_while_its_reference_was_down_is_planned_again_not_missed(
        online: Any, clock: datetime, settings: Any) -> None:
    settings.RETEST_PER_DAY = 0
    e = online("a")
    ref = ReferenceEndpoint.objects.create(region=e.node.region, name="ref1", host="10.0.0.9",
                                           echo_port=7007, key_digest="0" * 64,
                                           records_through=time.time())
    first = Retest.objects.create(node=e.node, due_at=clock + timedelta(hours=1))
    retests.tick(clock + timedelta(hours=1))
    # The reference answers (its agent hands in every half second): a failure is the node's.
    report(e, Retest.objects.get(pk=first.pk), 0.0, ok=False)
    retests.tick(clock + timedelta(hours=1, minutes=1))
    assert Retest.objects.get(pk=first.pk).status == Retest.Status.MISSED
    # The reference goes down (its agent silent past REFERENCE_AGENT_SILENT_S): the run fails
    # as the host says, but what the platform saw on its side makes it the platform's failure.
    ReferenceEndpoint.objects.filter(pk=ref.pk).update(
        records_through=time.time() - settings.REFERENCE_AGENT_SILENT_S - 60)
    second = Retest.objects.create(node=e.node, due_at=clock + timedelta(hours=2))
    retests.tick(clock + timedelta(hours=2))
    for _ in range(settings.RUN_MAX_ATTEMPTS):  # tried again later, each time in the outage
        report(e, Retest.objects.get(pk=second.pk), 0.0, ok=False)
    assert Run.objects.get(job_id=Retest.objects.get(pk=second.pk).job_id).fault == "reference"
    before = timezone.now()
    assert retests.tick(clock + timedelta(hours=2, minutes=1)).skipped == 1
    second.refresh_from_db()
    assert second.status == Retest.Status.SKIPPED and "reference was down" in second.reason
    again = Retest.objects.get(node=e.node, status=Retest.Status.PLANNED)
    low, high = settings.RETEST_AGAIN_AFTER_SECONDS
    assert before + timedelta(seconds=low) <= again.due_at <= timezone.now() + timedelta(seconds=high)
    # A reference without an agent tells the platform nothing: no excuse is made from it.
    ReferenceEndpoint.objects.filter(pk=ref.pk).update(key_digest="")
    third = Retest.objects.create(node=e.node, due_at=clock + timedelta(hours=3))
    retests.tick(clock + timedelta(hours=3))
    report(e, Retest.objects.get(pk=third.pk), 0.0, ok=False)
    retests.tick(clock + timedelta(hours=3, minutes=1))
    assert Retest.objects.get(pk=third.pk).status == Retest.Status.MISSED


def test_a_buyers_running_job_defers_the_re_test_but_the_providers_own_runs_do_not(
        online: Any, clock: datetime, settings: Any, buyer: Actor, provider_owner: Actor) -> None:
    settings.RETEST_PER_DAY, settings.RETEST_MAX_DEFERRALS = 0, 2
    e, f = online("a"), online("b")
    job, _ = submission.submit(buyer.user, [e.node.pk], "network")
    lifecycle.claim(e.node, job.runs.get().pk)  # the node is running a buyer's run
    deferred = Retest.objects.create(node=e.node, due_at=clock + timedelta(hours=1))
    now = clock + timedelta(hours=1)
    for _ in range(2):
        assert retests.tick(now).deferred == 1
        now = Retest.objects.get(pk=deferred.pk).due_at
    assert retests.tick(now).busy == 1  # never measured over a buyer's job, never counted
    assert Retest.objects.get(pk=deferred.pk).status == Retest.Status.BUSY
    # A provider that keeps its own node busy to dodge a re-test gains nothing by it.
    submission.submit(provider_owner.user, [f.node.pk], "network")
    dodged = Retest.objects.create(node=f.node, due_at=clock + timedelta(hours=4))
    assert retests.tick(clock + timedelta(hours=4)).submitted == 1
    assert Retest.objects.get(pk=dodged.pk).status == Retest.Status.SUBMITTED


def test_a_buyers_job_the_node_never_claims_does_not_defer_the_re_test(
        online: Any, clock: datetime, settings: Any, other_buyer: Actor) -> None:
    # A sock-puppet buyer account queues a job the host never claims: on main every re-test
    # was deferred until it counted as "busy" (not against the node).
    settings.RETEST_PER_DAY = 0
    e = online("a")
    submission.submit(other_buyer.user, [e.node.pk], "network")
    due = Retest.objects.create(node=e.node, due_at=clock + timedelta(hours=1))
    assert retests.tick(clock + timedelta(hours=1)).submitted == 1
    assert Retest.objects.get(pk=due.pk).status == Retest.Status.SUBMITTED


def test_a_pause_skips_re_tests_and_a_stale_one_is_the_platforms_fault(
        online: Any, clock: datetime, settings: Any) -> None:
    settings.RETEST_PER_DAY = 0
    e = online("a")
    retests.pause(e.node, 2, "firmware update", None, now=clock + timedelta(hours=1))
    paused = Retest.objects.create(node=e.node, due_at=clock + timedelta(hours=2))
    stale = Retest.objects.create(node=e.node, due_at=clock)
    retests.tick(clock + timedelta(hours=2))
    paused.refresh_from_db()
    stale.refresh_from_db()
    assert paused.status == Retest.Status.PAUSED and "firmware update" in paused.reason
    assert stale.status == Retest.Status.SKIPPED


def week(e: Enrolled, clock: datetime, rate: Callable[[int], float],
         hours: tuple[int, ...] = (3, 9, 14, 20, 21, 22)) -> None:
    """Two days of re-tests at these hours, the node's figure at each hour from ``rate``."""
    for day in range(2):
        for hour in hours:
            now = clock + timedelta(days=day, hours=hour, minutes=30)
            retest = Retest.objects.create(node=e.node, due_at=now)
            retests.tick(now)
            report(e, Retest.objects.get(pk=retest.pk), rate(hour))
            retests.tick(now + timedelta(minutes=1))


def test_shared_bandwidth_varies_by_time_of_day_and_a_dedicated_link_is_stable(
        online: Any, clock: datetime, settings: Any, buyer: Actor) -> None:
    settings.RETEST_PER_DAY = 0
    shared, dedicated = online("shared"), online("dedicated")
    week(shared, clock, lambda h: 0.3 if h >= 20 else 0.94)
    week(dedicated, clock, lambda h: 0.94 + 0.005 * (h % 3))
    body = buyer.client().get(f"/api/v1/nodes/{shared.node.pk}/stability").json()
    figure = next(f for f in body["figures"] if f["metric"] == "network.tcp_throughput")
    assert figure["verdict"] == "varies-by-hour" and figure["worst_hours"] == [20, 21, 22]
    assert figure["retests"] == 12 and figure["hours"] == 6
    (finding,) = body["diagnosis"]
    assert finding["verdict"] == ("TCP throughput varies 3x across the day, worst at "
                                  "20:00-23:00: likely shared bandwidth")
    body = buyer.client().get(f"/api/v1/nodes/{dedicated.node.pk}/stability").json()
    assert [f["verdict"] for f in body["figures"] if f["metric"] == "network.tcp_throughput"] \
        == ["stable"]
    # The board shows the badge beside each node's ranked figure.
    board = buyer.client().get("/api/v1/leaderboard", {
        "metric": "network.tcp_throughput", "profile": "quick", "evidence": "any"}).json()
    badges = {r["node"]["name"]: r["stability"]["verdict"] for r in board["results"]}
    assert badges == {"shared": "varies-by-hour", "dedicated": "stable"}


def test_a_kept_stability_figure_moves_with_each_settled_re_test_and_with_the_window(
        online: Any, clock: datetime, settings: Any) -> None:
    # A node's figures are kept between pages (#35); what it was judged from names the key,
    # so nothing a node does after, failing a re-test or waiting for its bad days to pass
    # the window, keeps an older figure on show.
    settings.RETEST_PER_DAY = 0
    e = online("shared")
    week(e, clock, lambda h: 0.3 if h >= 20 else 0.94)
    metric = "network.tcp_throughput"

    def read(now: datetime | None = None) -> Any:
        return stability_board.figures([e.node.pk], [metric], now)[e.node.pk][metric]

    first = read()
    assert first.verdict == "varies-by-hour" and (first.retests, first.missed) == (12, 0)
    with CaptureQueriesContext(connection) as kept:
        assert read() == first
    assert not [q["sql"] for q in kept.captured_queries if "jobs_sample" in q["sql"]]
    # A re-test the node fails is in the next read at once.
    due = timezone.now() - timedelta(hours=1)
    retest = Retest.objects.create(node=e.node, due_at=due)
    retests.tick(due)
    report(e, Retest.objects.get(pk=retest.pk), 0.0, ok=False)
    retests.tick(due + timedelta(minutes=1))
    assert Retest.objects.get(pk=retest.pk).status == Retest.Status.MISSED
    after = read()
    assert (after.retests, after.missed) == (12, 1)
    # A day on, the first day's six re-tests have left the window, and the figure with them.
    later = read(clock + timedelta(days=settings.STABILITY_WINDOW_DAYS, hours=23))
    assert (later.retests, later.missed) == (6, 1)


def test_the_plan_ahead_is_never_shown_and_a_pause_is_the_providers_alone(
        online: Any, clock: datetime, settings: Any, provider_owner: Actor,
        other_buyer: Actor) -> None:
    e = online("a")
    Retest.objects.create(node=e.node, due_at=timezone.now() + timedelta(hours=3))
    Retest.objects.create(node=e.node, due_at=timezone.now() - timedelta(hours=3),
                          status=Retest.Status.MISSED, reason="the node was offline")
    body = provider_owner.client().get(f"/api/v1/nodes/{e.node.pk}/stability").json()
    assert [r["status"] for r in body["retests"]] == ["missed"]
    url = f"/api/v1/nodes/{e.node.pk}/retests/pause"
    assert other_buyer.client().post(url, {"hours": 2}, format="json").status_code == 404
    assert provider_owner.client().post(url, {"hours": 1000}, format="json").status_code == 400
    made = provider_owner.client().post(url, {"hours": 2, "reason": "rack move"}, format="json")
    assert made.status_code == 201 and made.json()["reason"] == "rack move"
    body = provider_owner.client().get(f"/api/v1/nodes/{e.node.pk}/stability").json()
    assert body["paused_now"]["reason"] == "rack move"
    resumed = provider_owner.client().post(f"/api/v1/nodes/{e.node.pk}/retests/resume")
    assert resumed.status_code == 200 and resumed.json()["paused_now"] is None
    assert RetestPause.objects.get(node=e.node).end <= timezone.now()  # kept, and judged


@pytest.mark.django_db(transaction=True)
def test_a_round_run_now_is_not_skipped_by_the_scheduler_s_own_tick(
        online: Any, monkeypatch: Any) -> None:
    # `manage.py retest_round` (the demo's compressed day) makes re-tests due yesterday and
    # starts them; the scheduler's tick on the real clock, running between the two, skipped
    # them as due while the scheduler was down.
    shared, steady = online("shared"), online("steady")
    real_tick = retests.tick

    def the_scheduler_ticks_first(at: datetime, rng: random.Random | None = None) -> Any:
        def scheduler() -> None:
            try:
                retests.run_due(timezone.now())
            finally:
                connection.close()
        beside = threading.Thread(target=scheduler)
        beside.start()
        beside.join()
        return real_tick(at, rng)

    monkeypatch.setattr(retests, "tick", the_scheduler_ticks_first)
    yesterday = timezone.localtime(timezone.now() - timedelta(days=1))
    out = io.StringIO()
    call_command("retest_round", f"--at={yesterday:%Y-%m-%dT22:20}",
                 f"--nodes={shared.node.pk},{steady.node.pk}", "--suite=network", stdout=out)
    answer = json.loads(out.getvalue().strip().splitlines()[-1])
    assert {v["status"] for v in answer.values()} == {"submitted"}, answer
    assert Retest.objects.filter(status=Retest.Status.SKIPPED).count() == 0


@pytest.mark.django_db(transaction=True)
def test_a_due_re_test_starts_while_its_node_s_row_is_being_updated(online: Any) -> None:
    # A heartbeat updates the node's row now and then. The re-test's own lock took the
    # node's row with it (FOR UPDATE over the join, SKIP LOCKED), so a re-test due at that
    # moment was skipped over, stayed planned, and the stale rule dropped it later.
    steady = online("steady")
    locked, release = threading.Event(), threading.Event()

    def heartbeat() -> None:
        try:
            with transaction.atomic():
                Node.objects.filter(pk=steady.node.pk).update(last_seen_at=timezone.now())
                locked.set()
                release.wait(30)
        finally:
            connection.close()

    beside = threading.Thread(target=heartbeat)
    beside.start()
    try:
        assert locked.wait(10)
        retest = Retest.objects.create(node=steady.node, due_at=timezone.now())
        out = retests.run_due(timezone.now())
    finally:
        release.set()
        beside.join()
    retest.refresh_from_db()
    assert (retest.status, out.submitted) == (Retest.Status.SUBMITTED, 1)
