"""The training probe's figures from its raw timings (recorded shape, no torch run)."""

from __future__ import annotations

from benchmarks.probes.training_samples import distributed_samples
from jobs.services import consistency
from jobs.services.consistency import Facts


def timings(step_ms: list[float]) -> dict[str, object]:
    return {"backend": "gloo", "world_size": 2, "batch_size": 32, "step_ms": step_ms,
            "compute_ms": [ms * 0.5 for ms in step_ms], "comm_skipped": "one rank"}


def test_the_rate_is_the_batch_over_the_median_step_even_when_busy_steps_split_in_two() -> None:
    # CI's convnet run on a loaded machine: four steps whose two middle ones lay far apart. The
    # median of the per-step rates was 42.42 samples/s against the 37.79 of the median step,
    # and the intake refused the honest result as inconsistent.
    steps = [1_080.0, 1_100.0, 2_287.0, 2_400.0]
    by_metric = {s.metric: s for s in distributed_samples(timings(steps))}
    step, rate = by_metric["training.step_time"], by_metric["training.samples_per_s"]
    assert step.value == 1_693.5
    assert rate.value == 64 / 1.6935
    assert rate.min == 64 / 2.4 and rate.max == 64 / 1.08  # the spread is still the steps'
    facts = Facts(samples=[s.as_dict() for s in by_metric.values()],
                  params={"training_ranks": 2, "training_batch": 32}, nic_mbps=[])
    assert consistency.samples_per_s_matches_step(facts) is None
