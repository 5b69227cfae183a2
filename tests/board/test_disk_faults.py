"""Which node's disk is slow, from one job's storage figures (#36): the rule on recorded figures.

The figures are the lab's (tests/labtests/test_disk_fault_lab.py, and healthy storage jobs of
3 and 4 lab hosts on this machine's one disk): 4k random-read IOPS of two repetitions of
2 s (the fault bench's fio), with their CV. The lab injects the slow disk into real hosts;
here the rule's edges are checked on figures on either side of them.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import pytest
from django.utils import translation

from board import disk_faults
from board.disk_faults import Figure
from jobs.models import Sample
from jobs.services import lifecycle, submission


def figures(job: Mapping[str, tuple[float, float]], n: int = 2) -> list[Figure]:
    return [Figure(node, value, n, cv) for node, (value, cv) in job.items()]


def named(found: list[Figure]) -> set[tuple[str, str, str]]:
    return {(f.code, f.part, f.kind) for f in disk_faults.findings(found)}


# Healthy storage jobs in the lab, every host on the real disk: node -> (IOPS, CV).
HEALTHY = [
    {"f1": (16353, 0.182), "f2": (16002, 0.138), "f3": (16480, 0.225)},
    {"f1": (13470, 0.027), "f2": (15996, 0.346), "f3": (13783, 0.080), "f4": (24327, 0.013)},
    {"f2": (23770, 0.099), "f3": (21947, 0.304), "f4": (19878, 0.260)},
    {"f1": (11351, 0.089), "f2": (13146, 0.002), "f3": (12270, 0.001), "f4": (11901, 0.091)},
    {"f1": (16873, 0.047), "f3": (16294, 0.069), "f4": (16513, 0.037)},
]
# f2 in a blkio cgroup at 2,000 IOPS (lab/faults.py slow-disk), f1 and f3 on the real disk.
SLOW_F2 = [
    {"f1": (19408, 0.043), "f2": (1955, 0.029), "f3": (18729, 0.029)},
    {"f1": (25684, 0.109), "f2": (1986, 0.015), "f3": (24242, 0.065)},
    {"f1": (35179, 0.114), "f2": (1982, 0.029), "f3": (34453, 0.149)},
]
SLOW = ("slow-disk", "disk:f2", "slow")


@pytest.mark.parametrize("job", HEALTHY)
def test_a_healthy_jobs_spread_names_no_disk(job: Mapping[str, tuple[float, float]]) -> None:
    # The slowest healthy node here read 0.55 of its fastest peer (three or four hosts' fio
    # at once on two cores): a quarter leaves room twice over.
    assert named(figures(job)) == set()


@pytest.mark.parametrize("job", SLOW_F2)
def test_the_throttled_disk_is_named_slow(job: Mapping[str, tuple[float, float]]) -> None:
    assert named(figures(job)) == {SLOW}


def test_the_finding_gives_its_rule_and_numbers() -> None:
    (found,) = disk_faults.findings(figures(SLOW_F2[0]))
    assert found.rule == "disk_faults.slow_share" and "quarter" in found.why
    # Its own figure, the slowest peer's, its share of it, the bound and the gap's spread.
    for number in ("1,955", "18,729", "10%", "25%", "3 times"):
        assert number in found.verdict, (number, found.verdict)
    assert "f2" in found.advice


def test_a_slow_disk_beside_a_noisy_peer_is_still_named() -> None:
    # The noisiest healthy figure measured (two repetitions a third apart) as a peer: the
    # gap is judged on the figures' standard errors, not on one repetition's spread.
    job = HEALTHY[1] | {"f2": (1980.0, 0.03), "f5": HEALTHY[1]["f2"]}
    assert named(figures(job)) == {SLOW}


def test_a_gap_within_the_spread_is_not_a_finding() -> None:
    # Under a quarter of each peer, but its own repetitions as far apart as the gap.
    job = {"f1": (20000, 0.02), "f2": (4000, 3.0), "f3": (21000, 0.02)}
    assert named(figures(job)) == set()
    assert named(figures(job | {"f2": (4000, 0.05)})) == {SLOW}


def test_a_node_of_one_repetition_is_neither_judged_nor_a_peer() -> None:
    job = figures(SLOW_F2[0])
    one = [Figure(f.node, f.value, 1, None) if f.node == "f2" else f for f in job]
    assert named(one) == set()
    # With one peer of one repetition, f2 has a single peer left: not judged.
    lone_peer = [Figure(f.node, f.value, 1, f.cv) if f.node == "f3" else f for f in job]
    assert named(lone_peer) == set()


def test_between_two_nodes_no_disk_is_named() -> None:
    assert named(figures({"f1": (20000, 0.01), "f2": (1000, 0.01)})) == set()


def test_a_disk_is_named_only_under_every_peer() -> None:
    # Two slow disks among three: neither is under every other node's, so neither is
    # named on this rule (the bench injects one fault at a time).
    assert named(figures({"f1": (20000, 0.01), "f2": (1000, 0.01), "f3": (1100, 0.01)})) == set()


def test_a_peer_that_inflates_its_figure_cannot_get_an_honest_node_named() -> None:
    # f4 claims a hundred times the others' IOPS: beside f1, f2 and f3 it is not a smear,
    # each honest node being within the others' spread.
    job = HEALTHY[3] | {"f4": (1_200_000.0, 0.001)}
    assert named(figures(job)) == set()


def test_a_later_figure_of_the_same_node_replaces_an_earlier() -> None:
    job = figures(SLOW_F2[0]) + [Figure("f2", 19000, 2, 0.02)]
    assert named(job) == set()


def test_the_finding_reads_in_chinese() -> None:
    with translation.override("zh-hans"):
        (found,) = disk_faults.findings(figures(SLOW_F2[0]))
    assert "1,955" in found.verdict and "磁盘" in found.verdict and "f2" in found.advice
    assert "慢盘" in found.why


def sample(metric: str, value: float, unit: str, cv: float = 0.05) -> dict[str, Any]:
    return {"metric": metric, "value": value, "unit": unit, "n": 2, "p5": value, "p95": value,
            "min": value, "max": value, "cv": cv, "metadata": {"direct": 1}}


def storage_job(buyer: Any, enrolled: list[Any], iops: list[float]) -> Any:
    """A storage job as its hosts post it: each node's random reads, with the mean latency
    that 32 fio jobs at that rate keep (Little's law, checked at intake)."""
    job, _ = submission.submit(buyer.user, [e.node.pk for e in enrolled], "storage",
                               {"repetitions": 2})
    for e, run, rate in zip(enrolled, job.runs.order_by("id"), iops, strict=True):
        claim = lifecycle.claim(e.node, run.pk)
        lifecycle.finish(e.node, run.pk, claim.attempt.id, True, [
            sample("storage.randread_iops", rate, "IOPS"),
            sample("storage.randread_lat_mean", 32 / rate * 1e6, "us")], "", {})
    return job


def test_the_jobs_slow_disk_is_served_with_its_links_and_no_other_jobs_figures(
        buyer: Any, enrol_node: Any, django_capture_on_commit_callbacks: Any) -> None:
    enrolled = [enrol_node(name, address=f"10.0.0.{i + 2}")
                for i, name in enumerate(("d1", "d2", "d3"))]
    with django_capture_on_commit_callbacks(execute=True):
        slow = storage_job(buyer, enrolled, [20000, 1900, 21000])
        # Another job where d2 was fine and its peers slow: not compared with the first.
        other = storage_job(buyer, enrolled, [1000, 30000, 1100])
    assert Sample.objects.filter(run__job=slow, metric="storage.randread_iops").count() == 3
    diagnosis = buyer.client().get(f"/api/v1/links?job={slow.pk}").json()["diagnosis"]
    assert [(f["code"], f["part"], f["kind"]) for f in diagnosis] == [
        ("slow-disk", "disk:d2", "slow")]
    assert "1,900" in diagnosis[0]["verdict"]
    assert buyer.client().get(f"/api/v1/links?job={other.pk}").json()["diagnosis"] == []
