"""The fault bench's draw and its score (#36), without a lab: the draw is the seed's, and the
score counts what the issue defines (precision over the parts named, recall over the faulty
cases, false alarms on healthy clusters)."""

from __future__ import annotations

import random

import pytest

from lab import faults
from perf import fault_bench
from perf.fault_bench import Outcome


def test_the_draw_is_the_seeds_and_covers_every_kind() -> None:
    cases = fault_bench.plan(36, 30)
    assert cases == fault_bench.plan(36, 30)
    assert cases != fault_bench.plan(37, 30)
    kinds = [fault.kind for _nodes, fault in cases]
    assert kinds.count("healthy") == 10 and len(kinds) - 10 >= 20
    assert set(kinds) == set(faults.KINDS)
    for nodes, fault in cases:
        assert len(nodes) in (3, 4) and set(fault.hosts) <= set(nodes)
        assert len(fault.hosts) == (0 if fault.kind == "healthy" else
                                    1 if fault.kind in faults.NODE_KINDS else 2)


def test_a_faults_part_is_what_a_finding_names() -> None:
    link = faults.draw(random.Random(1), ["f1", "f2", "f3"], "lossy-link")
    assert link.part == "link:" + "-".join(sorted(link.hosts)) and link.finding_kind == "lossy"
    assert faults.draw(random.Random(1), ["f1"], "latent-node").part == "node:f1"
    with pytest.raises(ValueError, match="unknown fault kind"):
        faults.draw(random.Random(1), ["f1"], "gremlins")


def test_the_score_counts_parts_cases_and_alarms() -> None:
    slow = faults.Fault("slow-nic", ("f2",), 0.3)
    lossy = faults.Fault("lossy-link", ("f1", "f3"), 0.01)
    healthy = faults.Fault("healthy", (), 0.0)
    outcomes = [
        Outcome(slow, ("f1", "f2", "f3"), {"node:f2": {"slow"}}, 30.0),
        # Right part, one wrong part beside it, and the kind wrong: precision 1 of 2.
        Outcome(lossy, ("f1", "f2", "f3"), {"link:f1-f3": {"slow"}, "node:f2": {"slow"}}, 40.0),
        Outcome(slow, ("f1", "f2", "f3"), {}, 35.0),  # missed
        Outcome(healthy, ("f1", "f2", "f3"), {}, 20.0),
        Outcome(healthy, ("f1", "f2", "f3", "f4"), {"link:f1-f4": {"latent"}}, 25.0),
    ]
    s = fault_bench.score(outcomes)
    assert (s.cases, s.right, s.kind_right, s.false_alarms) == (3, 2, 1, 1)
    assert s.precision == pytest.approx(2 / 3) and s.recall == pytest.approx(2 / 3)
    lines, met = fault_bench.table(outcomes, 36)
    assert not met and "seed 36" in lines[0] and lines[-1].endswith("MISSED")
    assert [o.line().rsplit(" ", 1)[1] for o in outcomes] == [
        "ok", "EXTRA", "MISS", "ok", "ALARM"]


def test_an_accuracy_case_shows_its_time_and_the_interval_its_figure_reached() -> None:
    from perf.accuracy import Case, reached

    sample = {"value": 0.5, "metadata": {"interval": [0.49, 0.51], "precision": 0.02}}
    case = Case("throughput t500", 0.5, 0.5, "Gbit/s", True, seconds=41.6,
                interval=reached(sample))
    assert case.line() == ("throughput t500: set 0.5 Gbit/s, stored 0.5 Gbit/s, ratio 1.000, "
                           "42 s, interval +/-2.0% ok")
    # One repetition has no interval; a case without a job's time says neither.
    assert reached({"value": 0.5, "metadata": {}}) is None
    assert Case("x", 1.0, 1.1, "ms", False).line() == "x: set 1 ms, stored 1.1 ms, ratio 1.100 MISS"
