"""The reference's record against the host's figure: TCP RTT is compared with the fastest
round trip the reference's echo server timed itself (recorded echo logs, no network)."""

from __future__ import annotations

import json
import time
from pathlib import Path
from typing import Any

from fleet.models import ReferenceEndpoint, Region
from jobs.models import Sample
from jobs.services import evidence

ATTEMPT = "7d0c7c3e-5a43-4f4e-9d55-4a1f4d2a0c11"


def endpoint(tmp_path: Path, rtts_ms: list[float]) -> ReferenceEndpoint:
    log = tmp_path / "echo.jsonl"
    log.write_text(json.dumps({"token": evidence.echo_token(ATTEMPT), "client": "10.0.0.5",
                               "started": time.time(), "round_trips": len(rtts_ms),
                               "rtts_ms": rtts_ms, "median_ms": sorted(rtts_ms)[len(rtts_ms) // 2]})
                   + "\n")
    return ReferenceEndpoint(region=Region(code="hangzhou"), name="ref1", host="10.0.0.1",
                             iperf3_port=5201, echo_port=7, echo_log=str(log))


def review(ref: ReferenceEndpoint, host_ms: float) -> tuple[evidence.Review, dict[str, Any]]:
    sample = {"metric": "network.tcp_rtt", "value": host_ms, "unit": "ms",
              "metadata": {"peer": "reference:hangzhou:ref1"}}
    now = time.time()
    return evidence.review([sample], {"reference:hangzhou:ref1": ref}, ATTEMPT, now - 60,
                           now + 60), sample


def test_a_loaded_reference_timing_longer_round_trips_still_verifies_an_honest_host(
        tmp_path: Path) -> None:
    # The CI failure this rule replaced: a loopback path, a busy reference whose median was
    # 0.73 ms while the host timed 0.11 ms; the host is not faster than the fastest trip.
    ref = endpoint(tmp_path, [0.09, 0.12, 0.7, 0.73, 0.74, 0.9, 1.4])
    result, sample = review(ref, 0.1145)
    assert result.mismatches == []
    assert sample["evidence"] == Sample.PLATFORM_VERIFIED
    assert sample["value"] == 0.73 and sample["metadata"]["host_value"] == 0.1145


def test_a_host_claiming_a_shorter_path_than_the_reference_timed_is_refused(
        tmp_path: Path) -> None:
    ref = endpoint(tmp_path, [19.8, 20.1, 20.0, 20.4, 21.0])  # Hangzhou <-> Shenzhen
    result, sample = review(ref, 5.0)
    assert [(m.metric, m.host_value, m.reference_value) for m in result.mismatches] == [
        ("network.tcp_rtt", 5.0, 20.1)]
    assert "evidence" not in sample  # left host-reported, and the run is refused
    within, _ = review(endpoint(tmp_path, [19.8, 20.1, 20.0, 20.4, 21.0]), 18.5)
    assert within.mismatches == []  # 10% under the fastest trip: two timers' disagreement
