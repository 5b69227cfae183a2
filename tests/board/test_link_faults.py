"""Which part of a node set is bad, from its links (#36): the rules on crafted links.

The lab injects the same faults into real links (perf/accuracy.py faults, and
tests/labtests/test_link_faults_lab.py); here each rule's edge is checked on figures
chosen to sit on either side of it.
"""

from __future__ import annotations

import random
import re
import statistics
from typing import Any

import pytest
from django.utils import translation

from board import link_faults
from board.models import LinkResult
from fleet.models import Node

HEALTHY = {"throughput_gbps": 0.48, "throughput_cv": 0.01, "retransmits_per_gb": 200.0,
           "rtt_ms": 0.12}


def cluster(names: str, bad: dict[tuple[str, str], dict[str, Any]] | None = None,
            region: dict[str, int] | None = None,
            noise: random.Random | None = None) -> list[LinkResult]:
    """Every ordered pair of ``names``' nodes, healthy unless ``bad`` says otherwise."""
    nodes = {n: Node(name=n, region_id=(region or {}).get(n, 1)) for n in names}
    links = []
    for a in names:
        for b in names:
            if a == b:
                continue
            figures = dict(HEALTHY)
            if noise:  # an honest lab's spread: a few percent, a few hundred retransmits
                figures |= {"throughput_gbps": 0.48 * noise.uniform(0.95, 1.0),
                            "throughput_cv": noise.uniform(0.003, 0.03),
                            "retransmits_per_gb": noise.uniform(0, 600),
                            "rtt_ms": noise.uniform(0.06, 0.2)}
            figures |= (bad or {}).get((a, b), {})
            links.append(LinkResult(source=nodes[a], target=nodes[b], **figures))
    return links


def touching(node: str, names: str, figures: dict[str, Any]) -> dict[tuple[str, str], Any]:
    return {pair: figures for pair in ((node, o) for o in names if o != node)} | {
        (o, node): figures for o in names if o != node}


def both(a: str, b: str, figures: dict[str, Any]) -> dict[tuple[str, str], Any]:
    return {(a, b): figures, (b, a): figures}


def named(links: list[LinkResult]) -> set[tuple[str, str, str]]:
    return {(f.code, f.part, f.kind) for f in link_faults.findings(links)}


def test_a_healthy_cluster_with_an_honest_spread_has_no_finding() -> None:
    rng = random.Random(36)
    for size in (3, 4) * 50:
        assert named(cluster("abcd"[:size], noise=rng)) == set()


def test_a_slow_node_is_named_with_its_rule_and_numbers() -> None:
    found = link_faults.findings(cluster("abcd", touching("c", "abcd",
                                                           {"throughput_gbps": 0.14})))
    assert [(f.code, f.part, f.kind, f.rule) for f in found] == [
        ("slow-node", "node:c", "slow", "link_faults.slow_share")]
    assert found[0].verdict == "c: its links run at 0.14 of the others' 0.48 Gbit/s"
    assert "80%" in found[0].why


def test_a_slow_path_names_the_link_not_either_node() -> None:
    assert named(cluster("abc", both("a", "c", {"throughput_gbps": 0.15}))) == {
        ("slow-link", "link:a-c", "slow")}


def test_a_gap_within_the_links_own_spread_is_not_a_finding() -> None:
    # 0.33 is 69% of the others' 0.48: slow, when the link repeats within 1%...
    tight = both("a", "b", {"throughput_gbps": 0.33, "throughput_cv": 0.01})
    assert named(cluster("abcd", tight)) == {("slow-link", "link:a-b", "slow")}
    # ... but not when its own repetitions varied by 15%: 3 x 15% of 0.48 covers the gap.
    loose = both("a", "b", {"throughput_gbps": 0.33, "throughput_cv": 0.15})
    assert named(cluster("abcd", loose)) == set()


def test_loss_names_the_node_or_the_link() -> None:
    node = cluster("abcd", touching("b", "abcd", {"retransmits_per_gb": 9000.0}))
    assert named(node) == {("lossy-node", "node:b", "lossy")}
    link = cluster("abc", both("a", "c", {"retransmits_per_gb": 7000.0}))
    assert named(link) == {("lossy-link", "link:a-c", "lossy")}
    # Shaped links all retransmit as TCP probes for their rate: many, but alike, is no loss.
    everywhere = {(a, b): {"retransmits_per_gb": 4000.0} for a in "abcd" for b in "abcd"}
    assert named(cluster("abcd", everywhere)) == set()
    # A sender that does not count them (no figure) is judged on nothing, not on zero.
    assert named(cluster("abc", touching("a", "abc", {"retransmits_per_gb": None}))) == set()


def test_a_liar_inflating_its_loss_to_a_competitor_names_only_its_own_link() -> None:
    # a's host reports heavy loss toward d; d's own sends (d -> a, d -> b ...) are clean. d is
    # not named: a node needs every one of its links bad, and d's outgoing ones are its own.
    found = named(cluster("abcd", {("a", "d"): {"retransmits_per_gb": 50_000.0}}))
    assert found == {("lossy-link", "link:a-d", "lossy")}


def test_a_latent_node_is_named_within_a_region_not_across_cities() -> None:
    latent = cluster("abc", touching("b", "abc", {"rtt_ms": 5.2}))
    found = link_faults.findings(latent)
    assert [(f.code, f.part) for f in found] == [("latent-node", "node:b")]
    assert found[0].verdict == "b: its round trips take 5.20 ms, the others' 0.12 ms"
    # Between Hangzhou and Shenzhen the round trip is the distance's: not a fault.
    cities = cluster("abcd", touching("d", "abcd", {"rtt_ms": 12.5}),
                     region={"a": 1, "b": 1, "c": 1, "d": 2})
    assert named(cities) == set()


def test_each_kind_is_judged_on_its_own_figure() -> None:
    # A lossy node whose throughput also fell is named for both: one part, two kinds.
    hurt = cluster("abcd", touching("a", "abcd", {"retransmits_per_gb": 12_000.0,
                                                  "throughput_gbps": 0.2}))
    assert named(hurt) == {("slow-node", "node:a", "slow"), ("lossy-node", "node:a", "lossy")}


def test_every_finding_reads_in_chinese() -> None:
    faults = [touching("a", "abcd", {"throughput_gbps": 0.1}),
              touching("a", "abcd", {"retransmits_per_gb": 9e3}),
              touching("a", "abcd", {"rtt_ms": 6.0}),
              both("a", "b", {"throughput_gbps": 0.1}),
              both("a", "b", {"retransmits_per_gb": 9e3}),
              both("a", "b", {"rtt_ms": 6.0})]
    with translation.override("zh-hans"):
        found = [f for bad in faults for f in link_faults.findings(cluster("abcd", bad))]
    assert sorted({f.code for f in found}) == ["latent-link", "latent-node", "lossy-link",
                                                "lossy-node", "slow-link", "slow-node"]
    english = [t for f in found for t in (f.verdict, f.advice, f.why)
               if not re.search("[\u4e00-\u9fff]", t)]
    assert english == []


def test_a_named_node_explains_the_odd_bad_link_it_is_in() -> None:
    # A latent node whose relays also made one of its links retransmit (the lab, seed 36):
    # the node is the part; the link beside it is not another.
    latent = touching("c", "abc", {"rtt_ms": 5.3}) | {("b", "c"): {"rtt_ms": 5.2,
                                                                    "retransmits_per_gb": 5e3}}
    assert named(cluster("abc", latent)) == {("latent-node", "node:c", "latent")}
    # A bad link away from the named node is still named.
    apart = touching("d", "abcd", {"rtt_ms": 5.3}) | both("a", "b", {"retransmits_per_gb": 8e3})
    assert named(cluster("abcd", apart)) == {("latent-node", "node:d", "latent"),
                                             ("lossy-link", "link:a-b", "lossy")}


def test_a_parts_reference_is_the_median_and_spread_of_the_other_links() -> None:
    # The pool takes a part's reference by rank and sums, not by going over every link again:
    # it must read what statistics reads over the links left, duplicates and ties included.
    rng = random.Random(7)
    for _ in range(300):
        values = [rng.choice([0.48, 0.5, 0.14, 9000.0, rng.uniform(0, 1)])
                  for _ in range(rng.randint(1, 14))]
        removed = rng.sample(values, rng.randint(0, len(values)))
        left = list(values)
        for v in removed:
            left.remove(v)
        ref = link_faults.Pool(values).without(removed)
        if not left:
            assert ref is None
            continue
        assert ref is not None and ref.median == statistics.median(left)
        assert ref.spread == pytest.approx(statistics.stdev(left) if len(left) >= 2 else 0.0,
                                           rel=1e-12, abs=1e-12)
