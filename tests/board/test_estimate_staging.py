"""Data in the estimate: copying it once from the buyer's site, or streaming it every step,
at the throughput and round trip the buyer's own probe measured (board/staging.py)."""

from __future__ import annotations

from dataclasses import replace

import pytest

from board import staging
from board.estimate import BadWorkload, Measured, Workload, estimate
from contract import outcomes

JOB = Workload(name="job", params=1e8, train_flops_per_sample=6e8 * 512, global_batch=256,
               steps=10_000, sample_bytes=100_000, packed=False, dataset_gb=500.0,
               data_site=1, data_site_name="Hangzhou office")
NODE = Measured(tflops=100.0, busbw_curve=[(1e6, 10.0), (1e8, 10.0)],
                loader_samples_per_s=1e6, small_files_per_s=1e6, packed_files_per_s=1e6,
                site_gbps=1.0, site_rtt_ms=30.0)


def test_a_copy_made_once_takes_the_data_at_the_measured_throughput() -> None:
    on_node = estimate(replace(JOB, data_site=None), NODE)
    copied = estimate(JOB, NODE)
    faster = estimate(JOB, replace(NODE, site_gbps=2.0))
    copy_h = 500e9 * 8 / 1e9 / 3600  # 500 GB at 1 Gbit/s
    assert copied.hours - on_node.hours == pytest.approx(copy_h)
    assert faster.hours - on_node.hours == pytest.approx(copy_h / 2)
    assert copied.staging["code"] == "copy-once"
    assert copied.parts["staging"] == 0.0  # nothing a step: it is all before the job


def test_streaming_small_files_waits_a_round_trip_per_sample() -> None:
    streamed = estimate(replace(JOB, data_use=staging.STREAM), NODE)
    farther = estimate(replace(JOB, data_use=staging.STREAM), replace(NODE, site_rtt_ms=60.0))
    rest = streamed.parts["compute"] + streamed.parts["sync"] + streamed.parts["input"]
    fetch = 256 * 100_000 * 8 / 1e9 + 256 * 0.030 / staging.BOUNDS["stream_readers"]
    assert streamed.parts["staging"] == pytest.approx(fetch - rest)
    # Twice the round trip: the requests' share of the stall doubles.
    assert farther.parts["staging"] - streamed.parts["staging"] == pytest.approx(
        256 * 0.030 / staging.BOUNDS["stream_readers"])
    assert streamed.bottleneck == "staging"
    sentence = outcomes.summary({"bottleneck": streamed.bottleneck, "shares": streamed.shares,
                                 "hours": streamed.hours, "what_ifs": [],
                                 "staging": streamed.staging}, lambda v: f"{v:.3g}")
    assert sentence.startswith("streaming from your Hangzhou office adds")
    assert "copy the data once (1.11 h)" in sentence


def test_streaming_packed_data_follows_the_throughput() -> None:
    packed = replace(JOB, data_use=staging.STREAM, packed=True)
    slow = estimate(packed, replace(NODE, site_gbps=0.1))
    slower = estimate(packed, replace(NODE, site_gbps=0.05))
    assert slower.parts["staging"] > slow.parts["staging"] * 1.9
    # One request for the 25.6 MB step, not 256.
    assert staging.requests_per_step(256 * 100_000, 256, True) == 1


def test_without_a_probe_from_the_site_the_staging_is_unknown_not_zero() -> None:
    unknown = estimate(JOB, replace(NODE, site_gbps=None, site_rtt_ms=None))
    assert unknown.staging["code"] == "unknown" and "staging" in unknown.unmeasured
    words = outcomes.staging_words(unknown.staging, str)
    assert "unknown" in words and "benchctl probe" in words


def test_streaming_needs_the_sample_size() -> None:
    with pytest.raises(BadWorkload, match="sample_bytes"):
        estimate(replace(JOB, data_use=staging.STREAM, sample_bytes=0), NODE)


def test_streaming_to_another_province_names_the_sites_province_to_rent_in() -> None:
    from django.utils import translation

    streamed = replace(JOB, data_use=staging.STREAM, data_site_city="Hangzhou")
    far = estimate(streamed, replace(NODE, province="Guangdong"))
    near = estimate(streamed, replace(NODE, province="Zhejiang"))
    unknown = estimate(replace(streamed, data_site_city="Lhasa"), replace(NODE, province="Guangdong"))
    assert far.staging["code"] == "stream-elsewhere"
    assert outcomes.staging_words(far.staging, str).endswith("or rent in Zhejiang")
    with translation.override("zh-hans"):
        assert outcomes.staging_words(far.staging, str, translation.gettext).endswith(
            "或在浙江省租用")
    # In the site's own province, and from a city not listed: no province to name.
    assert near.staging["code"] == unknown.staging["code"] == "stream"
    assert near.staging["values"].get("province") is None
    assert far.parts["staging"] == near.parts["staging"]  # the words differ, not the figure
