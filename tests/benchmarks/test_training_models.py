"""The training probe's workloads (#20): a GPT-2-shaped transformer and a ResNet-50-shaped
convnet beside the MLP, each trained by two real gloo ranks through the probe."""

from __future__ import annotations

import functools
import json
import math
from dataclasses import asdict
from typing import Any

import pytest
import torch

from benchmarks.probes import training_models as tm
from benchmarks.probes.base import ProbeContext
from benchmarks.probes.training import TrainingProbe
from contract import training_shapes as ts
from contract.sample import Sample
from contract.suites import PARAMS, PROFILES, choice, resolve_params
from jobs.models import BenchmarkJob

# As small as the probe allows: model_mib=1 is the smallest shape of each.
TINY = {"training_ranks": 2, "model_mib": 1, "train_steps": 3, "allreduce_max_mib": 1,
        "dataloader_samples": 64, "training_batch": 2, "repetitions": 2}


def meta_count(module_factory: Any) -> int:
    """Parameters of a module built on the meta device: no memory, no time."""
    with torch.device("meta"):
        module = module_factory()
    return sum(p.numel() for p in module.parameters())


def test_the_shapes_are_gpt2s_and_resnet50s_to_the_parameter() -> None:
    # The published counts: GPT-2 small 124,439,808 and medium 354,823,168 (tied output
    # layer), torchvision's ResNet-50 25,557,032.
    assert ts.GPT2_SMALL.params() == meta_count(lambda: tm.Decoder(ts.GPT2_SMALL)) == 124_439_808
    assert ts.GPT2_MEDIUM.params() == meta_count(lambda: tm.Decoder(ts.GPT2_MEDIUM)) == 354_823_168
    assert ts.RESNET50.params() == meta_count(lambda: tm.resnet(ts.RESNET50)) == 25_557_032


@pytest.mark.parametrize("model_mib", [1, 8, 16, 64, 200, 475, 1354, 4096])
def test_model_mib_picks_the_largest_shape_that_fits(model_mib: int) -> None:
    budget = model_mib * ts.MIB
    t, c = ts.transformer_shape(model_mib), ts.convnet_shape(model_mib)
    assert t.params() * 4 <= budget or t == ts.scaled_gpt2_small(1)
    assert c.params() * 4 <= budget or c.width == 8
    assert t.d_model == 64 * t.heads  # GPT-2's 64-dimensional heads at every size
    if model_mib >= 475:
        assert t.params() >= ts.GPT2_SMALL.params()
    if model_mib >= 98:
        assert c == ts.RESNET50


# Two groups of gloo ranks at once, one from each xdist process, on two cores: CI saw a rank
# abort in C++ ("terminate called without an active exception", SIGABRT) twice in three runs,
# in this module and in test_gpu_check's. The tests that start ranks run alone, in the serial
# part, and one probe run per workload serves every test that reads it.
GLOO = pytest.mark.serial


@functools.cache
def run_probe(model: str) -> dict[str, Sample]:
    params = {name: float(p.default) for name, p in PARAMS.items()} | TINY | {
        "training_model": float(PARAMS["training_model"].choices.index(model))}
    probe = TrainingProbe(ProbeContext(params=params, report=lambda *_: None))
    probe.prepare()
    try:
        return {s.metric: s for s in probe.run()}
    finally:
        probe.cleanup()


@GLOO
@pytest.mark.parametrize(("model", "module_factory", "shape"), [
    ("transformer", lambda: tm.Decoder(ts.transformer_shape(1)), ts.transformer_shape(1)),
    ("convnet", lambda: tm.resnet(ts.convnet_shape(1)), ts.convnet_shape(1)),
])
def test_two_gloo_ranks_train_it_and_report_its_parameters_gradients_and_buckets(
        model: str, module_factory: Any, shape: Any) -> None:
    by_metric = run_probe(model)

    step = by_metric["training.step_time"]
    meta = step.metadata
    assert meta["model"] == model and meta["backend"] == "gloo" and meta["world_size"] == 2
    assert meta["model_shape"] == json.loads(json.dumps(asdict(shape)))
    # The count the ranks reported is the module's own, built here independently.
    assert meta["model_params"] == meta_count(module_factory) == shape.params()
    assert meta["gradient_bytes"] == 4 * meta["model_params"]  # fp32 gradients, all trainable
    buckets = meta["ddp_bucket_bytes"]
    assert meta["ddp_bucket_cap_bytes"] == 25 * ts.MIB  # DDP's default bucket_cap_mb
    assert meta["ddp_buckets"] == len(buckets) >= math.ceil(meta["gradient_bytes"] / (25 * ts.MIB))
    assert sum(buckets) == meta["gradient_bytes"]  # every gradient in exactly one bucket
    assert step.n == TINY["train_steps"] and step.value > 0
    assert by_metric["training.compute_time"].value > 0
    busbw = by_metric["training.allreduce_busbw"]
    assert busbw.value > 0
    assert (busbw.metadata["transport"], busbw.metadata["net_device"]) == ("gloo/tcp", "")
    assert busbw.metadata["model"] == model


def test_a_torch_without_ddp_logging_data_says_so() -> None:
    assert tm.ddp_buckets(object())["ddp_buckets"] is None


def test_the_published_profiles_keep_the_mlp() -> None:
    for profile in PROFILES:
        assert choice("training_model", resolve_params({}, profile)["training_model"]) == "mlp"
    assert resolve_params({"training_model": "convnet"})["training_model"] == 2
    assert resolve_params({"training_model": 1})["training_model"] == 1


@pytest.mark.parametrize("value", ["resnet", 3, 1.5, True, None])
def test_a_bad_training_model_is_refused_at_submission_naming_it(
        value: Any, buyer: Any, enrol_node: Any) -> None:
    one = enrol_node("hz-1")
    response = buyer.client().post("/api/v1/benchmarks", {
        "nodes": [one.node.pk], "suite": "training", "params": {"training_model": value}},
        format="json")

    assert response.status_code == 400
    errors = response.json()["errors"]["params"]
    assert "training_model" in errors
    assert "mlp (0), transformer (1), convnet (2)" in str(errors["training_model"])
    assert not BenchmarkJob.objects.exists()


def test_a_named_training_model_is_accepted_and_runs_unranked(buyer: Any, enrol_node: Any) -> None:
    one = enrol_node("hz-1")
    response = buyer.client().post("/api/v1/benchmarks", {
        "nodes": [one.node.pk], "suite": "training", "params": {"training_model": "transformer"}},
        format="json")

    assert response.status_code == 202
    job = BenchmarkJob.objects.get()
    assert job.params == {"training_model": "transformer"}
    assert not job.runs.get().ranked  # a custom workload is kept for its owner, not ranked


@pytest.mark.parametrize("model", ["mlp", "transformer", "convnet"])
@pytest.mark.parametrize("model_mib", [1, 16])
def test_the_platforms_flop_count_is_torchs_own(model: str, model_mib: int) -> None:
    # The platform bounds step times by contract/training_shapes' count, computed without
    # torch; here torch counts the same step of the module the probe builds. Attention runs
    # on the math kernel so torch counts it (its bmm) at full size; the platform counts the
    # causal half. Everything else (matmuls, convolutions, their gradients) is exact.
    from torch.nn.attention import SDPBackend, sdpa_kernel
    from torch.utils.flop_counter import FlopCounterMode

    work = tm.build(model, model_mib, 2, torch.device("cpu"))
    with sdpa_kernel(SDPBackend.MATH), FlopCounterMode(display=False) as counter:
        work.loss(work.model(work.inputs)).backward()
    counted = {str(op): n for op, n in counter.get_flop_counts()["Global"].items()}
    attention = counted.pop("aten.bmm", 0)
    assert (model == "transformer") == (attention > 0)
    assert ts.workload_shape(model, model_mib).train_flops(2) == sum(counted.values()) + attention / 2


@GLOO
def test_an_honest_probes_steps_pass_the_platforms_floor() -> None:
    # The real probe's steps on this CPU against the bound the intake applies to them.
    from contract import gpu_models
    from jobs.services import consistency

    by_metric = run_probe("transformer")
    params = {name: float(p.default) for name, p in PARAMS.items()} | TINY | {"training_model": 1.0}
    facts = consistency.Facts(samples=[s.as_dict() for s in by_metric.values()], params=params,
                              nic_mbps=[10_000])
    assert consistency.step_within_attainable(facts) is None
    rate = consistency.training_rate(gpu_models.cpu()) * 1e12
    floor = ts.transformer_shape(1).train_flops(TINY["training_batch"]) / rate * 1000
    assert 0 < floor < by_metric["training.compute_time"].value
