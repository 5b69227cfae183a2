"""The samples table by month (jobs.services.partitions): made ahead, nothing lost, old months
rolled up to their figures, and the date a figure is filed under is the platform's."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

import pytest
from django.db import connection

from board.ranking import history
from jobs.models import Run, Sample
from jobs.services import partitions, submission, sweeper
from jobs.services.partitions import Month
from tests.api.test_node_runs import GOOD, claim, post_result


def at(year: int, month: int, day: int = 15) -> datetime:
    return datetime(year, month, day, 12, tzinfo=UTC)


def home(sample: Sample) -> str:
    """The partition a sample's row is in."""
    with connection.cursor() as cur:
        cur.execute("SELECT tableoid::regclass::text FROM jobs_sample WHERE id = %s", [sample.pk])
        return str(cur.fetchone()[0])


def dated(sample: Sample, when: datetime) -> Sample:
    # created_at is auto_now_add (the intake's clock), so a test moves a row in time by SQL;
    # PostgreSQL moves it between partitions as it would any update of the key.
    Sample.objects.filter(pk=sample.pk).update(created_at=when)
    return Sample.objects.get(pk=sample.pk)


@pytest.fixture
def run(buyer: Any, enrol_node: Any) -> Run:
    node = enrol_node("hz-1")
    job, _ = submission.submit(buyer.user, [node.node.pk], "network")
    return job.runs.get()


METRIC = "network.tcp_throughput"  # GOOD's


def sample(run: Run, **metadata: Any) -> Sample:
    fields: dict[str, Any] = {k: v for k, v in GOOD.items() if k != "metric"}
    return Sample.objects.create(run=run, metric=METRIC, metadata=metadata, **fields)


@pytest.mark.django_db
def test_this_month_and_the_months_ahead_are_made_once() -> None:
    assert partitions.ensure(at(2031, 11), ahead=2) == 3
    there = partitions.partitions()
    assert {Month(2031, 11), Month(2031, 12), Month(2032, 1)} <= set(there)
    assert there[Month(2032, 1)] == "jobs_sample_y2032m01"
    assert partitions.ensure(at(2031, 11), ahead=2) == 0
    assert partitions.ensure(at(2031, 12, 31), ahead=2) == 1  # February 2032


@pytest.mark.django_db
def test_the_migration_left_this_month_ready() -> None:
    now = datetime.now(UTC)
    assert Month.of(now) in partitions.partitions()


@pytest.mark.django_db
def test_a_figure_dated_where_no_month_is_made_yet_loses_nothing(run: Run) -> None:
    # A clock far off (or a sweeper stopped for months) puts a row past the months made: it
    # waits in the default partition, and making its month moves it in, the same row.
    far = dated(sample(run, peer="reference:hz"), at(2033, 3))
    assert home(far) == "jobs_sample_default"
    assert partitions.ensure(at(2033, 3, 1), ahead=0) == 1
    moved = Sample.objects.get(pk=far.pk)
    assert home(moved) == "jobs_sample_y2033m03"
    assert (moved.value, moved.metadata, moved.created_at) == (far.value, far.metadata,
                                                                far.created_at)
    assert run.samples.count() == 1


@pytest.mark.django_db
def test_a_month_past_the_keep_is_rolled_up_to_its_figures(run: Run, buyer: Any) -> None:
    partitions.make(Month(2024, 1))
    partitions.make(Month(2024, 2))
    curve = [{"size_mib": 1, "busbw_gbs": 1.0}]
    raw = {"peer": "reference:hz", "interval": [9.3, 9.5], "precision": 5, "curve": curve,
           "conditions": {"steal": 0.1}, "cookies": ["abc"]}
    old = dated(sample(run, **raw), at(2024, 1, 31))
    younger = dated(sample(run, **raw), at(2024, 2, 1))
    current = sample(run, **raw)
    # February 2025: January 2024 ended 12 months ago, inside the 13 kept whole.
    assert partitions.roll_up(at(2025, 2, 28), keep_months=13) == 0
    # March 2025: it ended over 13 months ago. Its figures stay, its raw metadata goes.
    assert partitions.roll_up(at(2025, 3, 1), keep_months=13) == 1
    rolled = Sample.objects.get(pk=old.pk)
    assert home(rolled) == "jobs_sample_y2024m01_rolled"
    assert rolled.metadata == {"peer": "reference:hz", "interval": [9.3, 9.5], "precision": 5}
    assert (rolled.value, rolled.p5, rolled.p95, rolled.n, rolled.evidence, rolled.created_at) \
        == (old.value, old.p5, old.p95, old.n, old.evidence, old.created_at)
    for kept in (younger, current):
        assert Sample.objects.get(pk=kept.pk).metadata == raw
    # A node's history still shows the old figure with its interval (runs succeeded).
    Run.objects.filter(pk=run.pk).update(status="succeeded", finished_at=at(2024, 1, 31))
    points = {p["sample"]: p for p in history(run.node, METRIC, viewer=buyer.user)}
    assert points[old.pk]["value"] == old.value
    assert points[old.pk]["interval"] == [9.3, 9.5]
    assert partitions.roll_up(at(2025, 3, 1), keep_months=13) == 0
    assert partitions.partitions()[Month(2024, 1)] == "jobs_sample_y2024m01_rolled"
    # New rows still get ids past every old one, and the rolled month still takes rows.
    assert sample(run).pk > current.pk
    assert home(dated(sample(run), at(2024, 1, 2))) == "jobs_sample_y2024m01_rolled"


@pytest.mark.django_db
def test_a_host_cannot_file_its_figures_under_an_old_month(buyer: Any, enrol_node: Any) -> None:
    # A figure dated a year back would be rolled up (or, with a shorter keep, dropped from a
    # window) early: the date is the platform's clock at intake, whatever the host sends.
    node = enrol_node("hz-1")
    job, _ = submission.submit(buyer.user, [node.node.pk], "network")
    run = job.runs.get()
    attempt = claim(node, run).json()["attempt_id"]
    posted = {**GOOD, "created_at": "2020-01-01T00:00:00Z"}
    before = datetime.now(UTC)
    assert post_result(node, run, attempt, [posted]).json() == {"status": "stored"}
    stored = run.samples.get()
    assert stored.created_at >= before
    assert home(stored) == Month.of(stored.created_at).name


@pytest.mark.django_db
def test_the_sweeper_makes_the_months_ahead(settings: Any, enrol_node: Any) -> None:
    # Set ahead further than the migration made: the next pass makes the two missing months,
    # and the pass after it none.
    enrol_node("hz-1")
    settings.SAMPLES_PARTITIONS_AHEAD = 4
    now = datetime.now(UTC)
    assert sweeper.sweep().months_made == 2
    assert Month.of(now).plus(4) in partitions.partitions()
    assert sweeper.sweep().months_made == 0
