"""A spec's geography: every city pair given once, with a source, no faster than fibre."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from lab import geography, netlab
from lab.cli import SPECS

SOURCE = "a test's figure"


def spec(pairs: list[dict[str, Any]], hosts: list[dict[str, Any]] | None = None,
         within_ms: float = 0) -> dict[str, Any]:
    return {"name": "geo", "hosts": hosts or [
        {"name": "hz", "region": "hangzhou"}, {"name": "sz", "region": "shenzhen"},
        {"name": "buyer", "kind": "site", "region": "hangzhou"}],
        "geography": {
            "cities": {"hangzhou": {"regions": ["hangzhou"], "at": [30.274, 120.155]},
                       "ningbo": {"regions": ["ningbo"]},
                       "shenzhen": {"regions": ["shenzhen"], "at": [22.543, 114.058]}},
            "within_city": {"rtt_ms": within_ms, "source": SOURCE},
            "pairs": pairs}}


ALL_PAIRS = [{"between": ["hangzhou", "ningbo"], "rtt_ms": 2.1, "source": SOURCE},
             {"between": ["hangzhou", "shenzhen"], "rtt_ms": 15.5, "source": SOURCE},
             {"between": ["ningbo", "shenzhen"], "rtt_ms": 16.2, "source": SOURCE}]


def refused(data: dict[str, Any]) -> str:
    with pytest.raises(netlab.LabError) as caught:
        netlab.LabSpec.from_dict(data)
    return str(caught.value)


def test_a_missing_pair_is_refused_with_the_entry_to_add() -> None:
    said = refused(spec(ALL_PAIRS[:2]))
    assert "no round trip between ningbo and shenzhen" in said
    assert "{between: [ningbo, shenzhen], rtt_ms: N, source: ...}" in said


def test_a_negative_figure_is_refused() -> None:
    said = refused(spec([ALL_PAIRS[0], ALL_PAIRS[1] | {"rtt_ms": -3}, ALL_PAIRS[2]]))
    assert "geography.pairs[1]: rtt_ms is -3" in said and "0 or more" in said


def test_an_unknown_city_is_refused_naming_the_known_ones() -> None:
    said = refused(spec([*ALL_PAIRS, {"between": ["hangzhou", "beijing"], "rtt_ms": 30,
                                      "source": SOURCE}]))
    assert "unknown city 'beijing'" in said and "(hangzhou, ningbo, shenzhen)" in said


def test_a_figure_without_its_source_is_refused() -> None:
    said = refused(spec([ALL_PAIRS[0] | {"source": ""}, *ALL_PAIRS[1:]]))
    assert "every figure names its source" in said


def test_a_figure_faster_than_light_in_fibre_is_refused() -> None:
    # 1,052 km there and back at 204,218 km/s: 10.30 ms at least.
    said = refused(spec([ALL_PAIRS[0], ALL_PAIRS[1] | {"rtt_ms": 10}, ALL_PAIRS[2]]))
    assert "faster than light in fibre" in said and "1,052 km" in said and "10.30 ms" in said


def test_a_host_whose_region_is_in_no_city_is_refused() -> None:
    said = refused(spec(ALL_PAIRS, hosts=[{"name": "bj", "region": "beijing"}]))
    assert "host bj: region 'beijing' is in no city" in said and "geography.cities" in said


def test_a_delay_within_a_city_is_refused_naming_delay_ms() -> None:
    said = refused(spec(ALL_PAIRS, within_ms=0.5))
    assert "within_city" in said and "delay_ms" in said


def test_without_a_geography_a_lab_adds_no_delay_between_cities() -> None:
    data = spec(ALL_PAIRS)
    del data["geography"]
    assert netlab.LabSpec.from_dict(data).geography is None


def test_each_host_detours_only_its_connections_to_other_cities() -> None:
    lab = netlab.NetLab(netlab.LabSpec.from_dict(spec(ALL_PAIRS)))
    geo = lab.spec.geography
    assert geo is not None
    plan = geo.detours({h.name: (h.region, lab.address(h.name)) for h in lab.spec.hosts})
    # hz and the buyer's site (Hangzhou, .1 and .3) reach sz (.2) with Hangzhou-Shenzhen's
    # figure, sz reaches both; no one detours toward its own city. Ningbo has no host here.
    assert plan["hz"] == plan["buyer"] == [geography.Detour("shenzhen", 17302, 15.5, ("10.213.0.2",))]
    assert plan["sz"] == [geography.Detour("hangzhou", 17300, 15.5, ("10.213.0.1", "10.213.0.3"))]
    rules = geography.nft_ruleset(plan["sz"])
    # The relay's own onward connections (marked) pass before any redirect.
    assert rules.index("meta mark 0x6765 return") < rules.index("redirect to :17300")
    assert "ip daddr { 10.213.0.1, 10.213.0.3 } meta l4proto tcp redirect to :17300" in rules
    assert "hook output" in rules and "prerouting" not in rules


@pytest.mark.parametrize("published", sorted(SPECS.glob("*.yaml")), ids=lambda p: p.stem)
def test_the_published_specs_load(published: Path) -> None:
    loaded = netlab.load_spec(published)
    if loaded.geography is not None:
        assert all(f.source for f in loaded.geography.pairs.values())
