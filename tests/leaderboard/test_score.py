"""The training readiness score: parts against targets, weighted, missing parts left out."""

from __future__ import annotations

from typing import Any

import pytest

from leaderboard.services.score import STABILITY, score


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
    figures = {"network.tcp_throughput": 9.0, STABILITY: 0.5}
    assert score(figures).value == 100.0 and score(figures).parts["stability"] is None
    settings.SCORE_WEIGHTS = {"stability": 3.0}
    assert score(figures).parts["stability"] == pytest.approx(0.625)
    assert score(figures).value == pytest.approx(100 * (3 * 1.0 + 3 * 0.625) / 6, abs=0.05)


def test_parts_scale_against_their_targets_and_missing_ones_are_left_out() -> None:
    # Bandwidth's target is what a 10 GbE link measures (9 Gbit/s), latency's 5 ms.
    s = score({"network.tcp_throughput": 4.5, "network.tcp_rtt": 10.0})
    assert s.parts["bandwidth"] == 0.5 and s.parts["latency"] == 0.5
    assert s.parts["gpu_utilisation"] is None
    assert s.value == 50.0


def test_weights_are_configuration(settings: Any) -> None:
    # Bandwidth at half its target, latency at its target: the default weights (3 and 2)
    # give 70, and a latency weight of 0 leaves bandwidth alone (50).
    figures = {"network.tcp_throughput": 4.5, "network.tcp_rtt": 5.0}
    assert score(figures).parts == pytest.approx({**score(figures).parts, "bandwidth": 0.5,
                                                  "latency": 1.0})
    assert score(figures).value == 70.0
    settings.SCORE_WEIGHTS = {"latency": 0.0}
    assert score(figures).value == 50.0
    assert score({"network.tcp_throughput": 4.5, "network.tcp_rtt": 10.0}).value == 50.0
    settings.SCORE_WEIGHTS = {"bandwidth": 1.0, "latency": 3.0}
    assert score({"network.tcp_throughput": 9.0, "network.tcp_rtt": 10.0}).value == pytest.approx(62.5)


def test_no_figures_no_score() -> None:
    assert score({}).value is None
