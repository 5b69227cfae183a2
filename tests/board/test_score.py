"""The training readiness score: parts against targets, weighted, missing parts left out,
and no score without every core part."""

from __future__ import annotations

from typing import Any

import pytest

from board.score import PARTS, STABILITY, score

# Storage at its targets: the core parts beside the network ones the tests vary.
STORAGE = {"storage.randread_iops": 100_000.0, "storage.checkpoint_write": 1.0}


def test_a_node_at_every_target_scores_100(settings: Any) -> None:
    settings.SCORE_WEIGHTS = {"stability": 1.0}  # weighted only when configured
    s = score({"network.tcp_throughput": 25, "network.tcp_rtt": 1, "training.allreduce_busbw": 3,
               "training.comm_share": 0.1, "storage.randread_iops": 500_000,
               "storage.checkpoint_write": 2, "training.dataloader_samples_per_s": 5000,
               "training.gpu_util_mean": 95, STABILITY: 0.95})
    assert s.value == 100.0
    assert set(s.parts.values()) == {1.0}


def test_stability_counts_only_when_weighted(settings: Any) -> None:
    # Half the best hour's throughput at the worst hour: 0.5 / 0.8 of the part's target.
    figures = {"network.tcp_throughput": 9.0, "network.tcp_rtt": 5.0, **STORAGE, STABILITY: 0.5}
    # Shown against its target, counted in no score until weighted.
    assert score(figures).value == 100.0 and "stability" not in score(figures).counted
    settings.SCORE_WEIGHTS = {"stability": 3.0}
    assert score(figures).parts["stability"] == pytest.approx(0.625)
    # Bandwidth 3, latency 2, the two storage parts 1 each at 1.0; stability 3 at 0.625.
    assert score(figures).value == pytest.approx(100 * (7 + 3 * 0.625) / 10, abs=0.05)


def test_parts_scale_against_their_targets_and_missing_ones_are_left_out() -> None:
    # Bandwidth's target is what a 10 GbE link measures (9 Gbit/s), latency's 5 ms.
    s = score({"network.tcp_throughput": 4.5, "network.tcp_rtt": 10.0,
               "storage.randread_iops": 50_000, "storage.checkpoint_write": 0.5})
    assert s.parts["bandwidth"] == 0.5 and s.parts["latency"] == 0.5
    assert s.parts["iops"] == 0.5 and s.parts["checkpoint"] == 0.5
    assert s.parts["gpu_utilisation"] is None  # not core: a host without a GPU still scores
    assert s.value == 50.0 and s.missing == ()


def test_weights_are_configuration(settings: Any) -> None:
    # Bandwidth at half its target, the rest at theirs: the default weights (3, 2, 1, 1)
    # give 5.5 / 7, and a latency weight of 0 leaves it out (3.5 / 5).
    figures = {"network.tcp_throughput": 4.5, "network.tcp_rtt": 5.0, **STORAGE}
    assert score(figures).parts == pytest.approx({**score(figures).parts, "bandwidth": 0.5,
                                                  "latency": 1.0})
    assert score(figures).value == pytest.approx(78.6)
    settings.SCORE_WEIGHTS = {"latency": 0.0}
    assert score(figures).value == 70.0
    assert score({"network.tcp_throughput": 4.5, "network.tcp_rtt": 10.0, **STORAGE}).value == 70.0
    settings.SCORE_WEIGHTS = {"bandwidth": 1.0, "latency": 3.0}
    assert score({"network.tcp_throughput": 9.0, "network.tcp_rtt": 10.0, **STORAGE}).value == 75.0


def test_a_missing_core_part_leaves_no_score_and_is_named(settings: Any) -> None:
    """A node that withholds its slow storage (or has only its host's word for it, which the
    callers leave out) must not score on its fast network alone."""
    fast = {"network.tcp_throughput": 25.0, "network.tcp_rtt": 0.5,
            "training.gpu_util_mean": 99.0}
    s = score(fast)
    assert s.value is None and s.missing == ("iops", "checkpoint")
    assert s.parts["bandwidth"] == 1.0  # the parts it has are still shown
    assert score({**fast, **STORAGE}).value == 100.0
    settings.SCORE_WEIGHTS = {"iops": 0.0, "checkpoint": 0.0}  # not weighted: not required
    assert score(fast).value == 100.0


def test_no_figures_no_score() -> None:
    assert score({}).value is None


def test_every_node_is_scored_on_the_same_parts_whatever_else_it_measured() -> None:
    """#32: a node with training and GPU figures collected more parts of its score than the
    others (seven against four), and every star for figures they never had the chance to
    show. The score is of the core parts only; the others are shown, counted in none."""
    core = {"network.tcp_throughput": 4.5, "network.tcp_rtt": 5.0, **STORAGE}
    more = core | {"training.allreduce_busbw": 3.0, "training.comm_share": 0.05,
                   "training.dataloader_samples_per_s": 5000.0, "training.gpu_util_mean": 99.0}
    worse = core | {"training.allreduce_busbw": 0.01, "training.gpu_util_mean": 1.0}
    scores = [score(figures) for figures in (core, more, worse)]
    assert {s.counted for s in scores} == {("bandwidth", "latency", "iops", "checkpoint")}
    assert [s.value for s in scores] == [78.6, 78.6, 78.6]
    # The parts it does not count are still judged against their targets, for the page.
    assert scores[1].parts["busbw"] == 1.0 and scores[2].parts["busbw"] == pytest.approx(0.008)


def test_the_core_parts_are_data_in_the_rule_file() -> None:
    from board import rules

    assert rules.score_core() == {"bandwidth", "latency", "iops", "checkpoint"}
    assert [p.name for p in PARTS if p.core] == ["bandwidth", "latency", "iops", "checkpoint"]
