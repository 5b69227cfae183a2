"""The node-to-node schedule: every link both ways, no node in two tests at once."""

from __future__ import annotations

import itertools

import pytest

from contract.schedule import link_rounds


@pytest.mark.parametrize("n", [2, 3, 4, 5, 8])
def test_every_ordered_pair_is_tested_once_and_no_node_twice_in_a_round(n: int) -> None:
    rounds = link_rounds(n)
    pairs = [pair for r in rounds for pair in r]
    assert sorted(pairs) == sorted(itertools.permutations(range(n), 2))
    for r in rounds:
        busy = [node for pair in r for node in pair]
        assert len(busy) == len(set(busy))


def test_a_single_node_tests_no_link() -> None:
    assert link_rounds(1) == []
