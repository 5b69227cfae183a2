"""Suites, profiles and parameter bounds, as the API validates them."""

from __future__ import annotations

import pytest

from benchmarks.probes import PROBES
from contract import metrics
from contract.suites import PARAMS, InvalidParams, resolve_params


def test_the_quick_profile_shortens_the_defaults_and_overrides_still_win() -> None:
    quick = resolve_params({"repetitions": 4}, "quick")
    assert quick["iperf3_duration"] < PARAMS["iperf3_duration"].default
    assert quick["repetitions"] == 4


@pytest.mark.parametrize(("overrides", "field"), [
    ({"iperf3_duration": 0}, "iperf3_duration"),
    ({"repetitions": 2.5}, "repetitions"),
    ({"repetitions": True}, "repetitions"),
    ({"warp": 1}, "warp"),
])
def test_out_of_bounds_parameters_name_the_field(overrides: dict[str, object], field: str) -> None:
    with pytest.raises(InvalidParams) as caught:
        resolve_params(overrides)
    assert field in caught.value.errors


def test_an_unknown_profile_is_refused() -> None:
    with pytest.raises(InvalidParams):
        resolve_params({}, "turbo")


def test_each_probe_measures_the_family_the_intake_accepts_from_it() -> None:
    # The intake (jobs) knows a probe's metrics from the contract alone, never from the probe.
    assert {name: set(p.produces) for name, p in PROBES.items()} == {
        name: set(metrics.family(name)) for name in PROBES}
