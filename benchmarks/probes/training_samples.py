"""The training probe's raw results (from the ranks and the launcher) turned into samples."""

from __future__ import annotations

import statistics
from dataclasses import replace
from typing import Any

from benchmarks.probes.training_ddp import ACCUMULATIONS, ALLREDUCE_WARMUP, busbw_factor
from contract.sample import Sample, single, summarise


def comm_share(step_ms: float, compute_ms: float) -> float:
    # Clamped: noise can make a no-sync step slower than a synced one when comm is ~free.
    return min(1.0, max(0.0, (step_ms - compute_ms) / step_ms)) if step_ms > 0 else 0.0


def distributed_samples(res: dict[str, Any]) -> list[Sample]:
    meta: dict[str, Any] = {k: res[k] for k in (
        "backend", "world_size", "nnodes", "local_ranks", "requested_ranks", "torch_version",
        "device", "model", "model_params", "model_shape", "gradient_bytes", "ddp_buckets",
        "batch_size", "warmup_steps") if k in res}
    meta["socket_ifname"] = {k: v for k, v in res.get("socket_ifname", {}).items() if v}
    samples: list[Sample] = []
    step_ms: list[float] = res["step_ms"]
    compute_ms: list[float] = res["compute_ms"]
    # How the gradients were cut for the all-reduce: the sizes DDP's reducer used.
    step_meta = meta | {k: res[k] for k in (
        "ddp_bucket_bytes", "ddp_bucket_cap_bytes", "ddp_buckets_unknown") if k in res}
    util = res.get("gpu_utilization")
    if isinstance(util, str):
        step_meta["gpu_utilization"] = util  # the reason it was not measured
    if res.get("comm_skipped"):
        step_meta["comm"] = res["comm_skipped"]
    step = summarise("training.step_time", step_ms, step_meta)
    samples.append(step)
    p95 = step.p95 if step.p95 is not None else step.value
    samples.append(single("training.step_time_p95", p95, len(step_ms), meta))
    per_step = res["world_size"] * res["batch_size"]
    # The rate's figure is the batch over the median step, so the two agree however the steps
    # spread: with an even count the median of the rates (a mean of two middle rates) is not the
    # rate of the median step, and a busy machine's 1.1 s and 2.3 s middle steps put them 12% apart.
    rates = summarise("training.samples_per_s", [per_step / (ms / 1000.0) for ms in step_ms], meta)
    samples.append(replace(rates, value=per_step / (step.value / 1000.0)))
    compute = summarise("training.compute_time", compute_ms, meta)
    samples.append(compute)
    if not res.get("comm_skipped"):
        for accum in ACCUMULATIONS:
            cycles = res["accum"][str(accum)]
            sync_ms = statistics.median(cycles["sync_ms"])
            local_ms = statistics.median(cycles["nosync_ms"])
            metric = "training.comm_share" if accum == 1 else f"training.comm_share_accum{accum}"
            share_meta = meta | {"accumulation": accum, "cycle_ms": sync_ms,
                                 "cycle_compute_ms": local_ms,
                                 "unclamped": (sync_ms - local_ms) / sync_ms}
            samples.append(single(metric, comm_share(sync_ms, local_ms),
                                  len(cycles["sync_ms"]), share_meta))
        curve = res["allreduce"]
        table = [{"size_mib": c["size_mib"], "algbw_gbs": statistics.median(c["algbw_gbs"]),
                  "busbw_gbs": statistics.median(c["busbw_gbs"])} for c in curve]
        ar_meta = meta | {"curve": table, "repetitions": res["repetitions"],
                          "busbw_factor": busbw_factor(res["world_size"]), "dtype": "float32",
                          "warmup": ALLREDUCE_WARMUP}
        # What carried the busbw: NCCL's transport from its own log (NET/IB, NET/Socket,
        # P2P, SHM) and device, or gloo's TCP and interface.
        ar_meta |= {k: res[k] for k in ("transport", "net_device", "nccl", "transport_unknown")
                    if k in res}
        peak = max(table, key=lambda row: row["busbw_gbs"])
        samples.append(single("training.allreduce_busbw", peak["busbw_gbs"], res["repetitions"],
                              ar_meta | {"size_mib": peak["size_mib"]}))
        samples.append(summarise("training.allreduce_busbw_largest", curve[-1]["busbw_gbs"],
                                ar_meta | {"size_mib": curve[-1]["size_mib"]}))
    if isinstance(util, dict):
        window = meta | {"samples": util["samples"], "devices": util["devices"],
                         "period_ms": res["nvml_period_s"] * 1000.0}
        samples.append(single("training.gpu_util_mean", util["util_mean"], util["samples"], window))
        samples.append(single("training.gpu_util_p5", util["util_p5"], util["samples"], window))
        samples.append(single("training.gpu_util_below80", util["below80"], util["samples"],
                              window))
        if util.get("power_mean_w") is not None:
            samples.append(single("training.gpu_power_mean", util["power_mean_w"],
                                  util["samples"], window))
    return samples


def dataloader_samples(res: dict[str, Any]) -> list[Sample]:
    table: list[dict[str, Any]] = res["table"]
    best = max(table, key=lambda row: row["samples_per_s"])
    baseline = next(row for row in table if row["num_workers"] == 0)
    recommendation = f"num_workers={best['num_workers']}"
    if best["prefetch_factor"] is not None:
        recommendation += f", prefetch_factor={best['prefetch_factor']}"
    meta = {"table": table, "recommendation": recommendation, "cpu_count": res["cpu_count"],
            "samples": res["samples"], "batch_size": res["batch_size"],
            "sample_bytes": res["sample_bytes"], "torch_version": res["torch_version"]}
    return [
        single("training.dataloader_samples_per_s", best["samples_per_s"], res["samples"],
               meta | {"num_workers": best["num_workers"], "prefetch_factor": best["prefetch_factor"]}),
        single("training.dataloader_gain", best["samples_per_s"] / baseline["samples_per_s"],
               res["samples"], meta),
    ]
