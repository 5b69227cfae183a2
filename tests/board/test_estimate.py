"""The step-time and cost model on figures chosen so each part can be checked by hand."""

from __future__ import annotations

import math
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from board.estimate import (
    BUCKET_BYTES,
    BadWorkload,
    Measured,
    Workload,
    buckets,
    busbw_at,
    estimate,
    from_preset,
    presets,
)

GBIT = 1.0 / 8 * 0.9  # GB/s of busbw an honest 1 GbE link gives a ring all-reduce


def test_every_preset_names_its_source_and_its_flops_follow_6nd() -> None:
    for name, p in presets().items():
        assert p["source"] and p["params"] > 0, name
        if "tokens_per_sample" in p:  # decoder and encoder transformers: 6 x params x tokens
            assert math.isclose(p["train_flops_per_sample"], 6 * p["params"] * p["tokens_per_sample"],
                                rel_tol=0.01), name


def test_busbw_is_interpolated_on_the_measured_curve_in_log_size() -> None:
    curve = [(2**20, 1.0), (4 * 2**20, 3.0)]
    assert busbw_at(curve, 2 * 2**20) == pytest.approx(2.0)  # halfway in log(size)
    assert busbw_at(curve, 1) == 1.0 and busbw_at(curve, 2**40) == 3.0  # flat beyond


def test_the_seeds_arithmetic_two_a100_nodes_on_1gbe_are_sync_bound() -> None:
    # GPT-2 medium over 2 x 8 GPUs: 355e6 x 4 bytes = 1.42 GB of gradients per step.
    job = from_preset("gpt2-medium", steps=20_000, nodes=2, gpus_per_node=8)
    slow = Measured(tflops=150.0, busbw_curve=[(BUCKET_BYTES, GBIT)],
                    price_cny_month=2 * 25_000, link_gbps=0.94)
    e = estimate(job, slow)
    grads = 355e6 * 4
    expected_sync = 2 * 15 / 16 * grads / (GBIT * 1e9)
    compute = 512 * 2.18e12 / (16 * 150e12)
    backward = 2 / 3 * compute
    assert e.parts["compute"] == pytest.approx(compute)
    assert e.sync_total_s == pytest.approx(expected_sync)
    # The link never rests once the first 1 MiB bucket is ready: everything after the end of
    # backward is exposed.
    assert e.parts["sync"] == pytest.approx(expected_sync + backward * 2**20 / grads - backward,
                                            rel=1e-6)
    assert e.bottleneck == "sync" and e.shares["sync"] > 0.9
    assert e.hours == pytest.approx(20_000 * e.step_s / 3600)
    assert e.cost_cny == pytest.approx(50_000 * e.hours / 730)
    # The next link class (10 GbE) and 4x accumulation both shorten the job.
    assert e.what_ifs["link_10gbe"].hours < e.hours / 5
    accum = e.what_ifs["accumulation_x4"]
    assert accum.hours < e.hours / 3 and accum.shares["sync"] < e.shares["sync"]


def test_ddp_buckets_are_one_mib_first_then_25_mib() -> None:
    assert buckets(60 * 2**20) == [2**20, BUCKET_BYTES, BUCKET_BYTES, 9 * 2**20]
    assert buckets(2**19) == [2**19]


def test_a_fast_link_hides_all_but_the_last_bucket_behind_backward() -> None:
    # 100 MiB of gradients, backward 1 s, every bucket's all-reduce far shorter than the
    # backward that produces the next: only the last bucket (the first layers, ready when
    # backward ends) is left to wait for.
    job = Workload("hidden", params=100 * 2**20 / 4, train_flops_per_sample=1.5e12,
                   global_batch=2, steps=1, nodes=2)
    m = Measured(tflops=1.0, busbw_curve=[(2**20, 10.0)])
    e = estimate(job, m)
    assert e.parts["compute"] == pytest.approx(1.5)
    last = 2 * 1 / 2 * (100 * 2**20 - 2**20 - 3 * BUCKET_BYTES) / 10e9
    assert e.parts["sync"] == pytest.approx(last)
    assert e.sync_total_s == pytest.approx(100 * 2**20 / 10e9)


def test_one_rank_syncs_nothing_and_compute_bounds_it() -> None:
    e = estimate(from_preset("resnet50", steps=100), Measured(tflops=100.0, busbw_curve=[]))
    assert e.parts["sync"] == 0.0 and e.bottleneck == "" and e.shares["compute"] == 1.0


def test_small_files_stall_the_input_and_packing_them_helps() -> None:
    job = Workload("files", params=1e6, train_flops_per_sample=1e9, global_batch=1000, steps=10,
                   packed=False)
    m = Measured(tflops=10.0, busbw_curve=[], loader_samples_per_s=5_000.0,
                 small_files_per_s=500.0, packed_files_per_s=50_000.0)
    e = estimate(job, m)
    assert e.parts["input"] == pytest.approx(1000 / 500 - 1000 * 1e9 / 10e12)  # files/s bound
    assert e.bottleneck == "input"
    assert e.what_ifs["packed"].parts["input"] == pytest.approx(1000 / 5_000 - 0.1)  # loader bound


def test_a_checkpoint_is_amortised_over_its_interval() -> None:
    job = Workload("ckpt", params=1e6, train_flops_per_sample=1e9, global_batch=100, steps=10,
                   checkpoint_bytes=10e9, checkpoint_interval=500)
    e = estimate(job, Measured(tflops=10.0, busbw_curve=[], checkpoint_gbs=0.25))
    assert e.parts["checkpoint"] == pytest.approx(10e9 / 0.25e9 / 500)


def test_a_part_without_a_figure_is_named_not_guessed() -> None:
    job = Workload("ckpt", params=1e6, train_flops_per_sample=1e9, global_batch=100, steps=10,
                   checkpoint_bytes=10e9, checkpoint_interval=500)
    e = estimate(job, Measured(tflops=10.0, busbw_curve=[]))
    assert e.unmeasured == ["input", "checkpoint"]
    assert e.parts["input"] == 0.0 and e.parts["checkpoint"] == 0.0


def test_nothing_is_estimated_from_figures_that_were_not_measured() -> None:
    # No default stands in for a missing measurement: a cluster without busbw, a host without
    # a matmul figure, or an impossible job is a clear error (HTTP 400), never a guess.
    two = from_preset("gpt2-small", steps=10, nodes=2)
    with pytest.raises(BadWorkload, match="bus bandwidth"):
        estimate(two, Measured(tflops=100.0, busbw_curve=[]))
    with pytest.raises(BadWorkload, match="matmul"):
        estimate(two, Measured(tflops=0.0, busbw_curve=[(1.0, 1.0)]))
    with pytest.raises(BadWorkload, match="at least 1"):
        estimate(from_preset("gpt2-small", steps=0), Measured(tflops=1.0, busbw_curve=[]))
    with pytest.raises(BadWorkload, match="known: bert-base, decoder-7b"):
        from_preset("gpt5", steps=1)


def _sync_by_iteration(params: float, ranks: int, curve: list[tuple[float, float]],
                       backward_s: float) -> tuple[float, float]:
    """The bucket-by-bucket recurrence the closed form replaces (as main computed it)."""
    from board import estimate as est

    total = params * est.GRAD_BYTES
    factor = 2 * (ranks - 1) / ranks
    produced = finish = whole = 0.0
    for size in est.buckets(total):
        produced += size
        seconds = factor * size / (est.busbw_at(curve, size) * 1e9)
        finish = max(backward_s * produced / total, finish) + seconds
        whole += seconds
    return whole, max(0.0, finish - backward_s)


@given(params=st.floats(min_value=1e3, max_value=3e9),
       ranks=st.integers(min_value=2, max_value=64),
       rates=st.lists(st.floats(min_value=0.01, max_value=500), min_size=1, max_size=13),
       backward_s=st.floats(min_value=1e-4, max_value=100))
def test_the_closed_form_all_reduce_time_is_the_bucket_by_bucket_one(
        params: float, ranks: int, rates: list[float], backward_s: float) -> None:
    from board import estimate as est

    curve = [(float(2 ** i) * 2**20, r) for i, r in enumerate(rates)]
    w = est.Workload(name="w", params=params, train_flops_per_sample=6 * params,
                     global_batch=8, steps=1, nodes=ranks)
    got = est.sync_seconds(w, est.Measured(tflops=100, busbw_curve=curve), backward_s)
    assert got == pytest.approx(_sync_by_iteration(params, ranks, curve, backward_s),
                                rel=1e-9, abs=1e-12)


def test_a_model_of_ten_trillion_parameters_costs_no_more_to_estimate(monkeypatch: Any) -> None:
    # #30: 1.5 million buckets a call, 18 s of CPU an estimate, four per candidate. The
    # work is counted (curve look-ups), not timed.
    from board import estimate as est

    looked_up = []
    real = est._busbw_on
    monkeypatch.setattr(est, "_busbw_on", lambda points, size: looked_up.append(size) or real(
        points, size))
    curve = [(float(2 ** i) * 2**20, 1.0 + i) for i in range(13)]
    w = est.Workload(name="w", params=1e13, train_flops_per_sample=6e13, global_batch=1024,
                     steps=1000, nodes=4, gpus_per_node=8)
    result = est.estimate(w, est.Measured(tflops=300, busbw_curve=curve, link_gbps=10))
    assert result.step_s > 0 and result.what_ifs
    assert est.bucket_counts(1e13 * est.GRAD_BYTES)[1] > 1_000_000  # the buckets it would loop
    assert len(looked_up) == 3 * (1 + len(result.what_ifs))  # three sizes an estimate
