"""The training probe's DDP measurement, run in each rank: step time with and without the
gradient all-reduce (comm share, with gradient accumulation), and the all-reduce bus
bandwidth curve.

The ranks are spawned by the launcher child (benchmarks.probes.training.launch_ranks); what
they train is built by benchmarks.probes.training_models. torch is imported inside
functions, so importing this module stays cheap.
"""

from __future__ import annotations

import json
import math
import os
import sys
import time
from collections.abc import Callable
from dataclasses import asdict
from datetime import timedelta
from typing import Any

from benchmarks.probes import cpu_threads

MIB = 1 << 20
GB = 1e9
WARMUP_STEPS = 3
ALLREDUCE_WARMUP = 5  # nccl-tests' default -w: the first calls at a size set up buffers
ACCUMULATIONS = (1, 4, 8)
SOCKET_IFNAME_VARS = ("GLOO_SOCKET_IFNAME", "NCCL_SOCKET_IFNAME")
# NCCL's own account of the transport it chose and the devices it used, one file per rank
# in the launcher's temp dir (benchmarks.parsers.nccl reads them).
NCCL_LOG_ENV = {"NCCL_DEBUG": "INFO", "NCCL_DEBUG_SUBSYS": "INIT,NET"}
NCCL_LOG_NAME = "nccl.{rank}.log"


def busbw_factor(world_size: int) -> float:
    """nccl-tests' all-reduce bus factor: each byte crosses 2(n-1)/n links."""
    return 2.0 * (world_size - 1) / world_size


def message_sizes_mib(max_mib: int) -> list[int]:
    sizes = [1]
    while sizes[-1] * 2 <= max_mib:
        sizes.append(sizes[-1] * 2)
    if sizes[-1] != max_mib:
        sizes.append(max_mib)  # the largest size asked for is always measured
    return sizes


def nccl_log_env(log_dir: str, rank: int) -> dict[str, str]:
    """NCCL's INFO lines on its init and network, into this rank's file in ``log_dir``."""
    return NCCL_LOG_ENV | {"NCCL_DEBUG_FILE": os.path.join(log_dir, NCCL_LOG_NAME.format(rank=rank))}


def rank_main(local_rank: int, config: dict[str, Any], result_path: str) -> None:
    """One DDP rank: a top-level function because spawn pickles it by name."""
    import torch
    import torch.distributed as dist

    world_size = int(config["world_size"])
    local_ranks = int(config["local_ranks"])
    rank = int(config.get("node_rank", 0)) * local_ranks + local_rank
    cuda = torch.cuda.is_available()
    backend = "nccl" if cuda else "gloo"
    if cuda:
        if config.get("log_dir"):  # before anything calls NCCL, which reads them once
            os.environ.update(nccl_log_env(str(config["log_dir"]), rank))
        device = torch.device("cuda", local_rank % torch.cuda.device_count())
        torch.cuda.set_device(device)
    else:
        device = torch.device("cpu")
        # Ranks share the cores: without this each would start one thread per core and
        # the figures would measure oversubscription. BENCH_TORCH_THREADS says otherwise
        # where several hosts share one machine's cores (benchmarks.probes.cpu_threads).
        # There two hosts' ranks of two threads each on two cores computed faster inside a
        # synced step, while the other rank waited on the link, than in the no-sync loop,
        # where both computed at once: a step of 454 ms against 549 ms of computation, which
        # the intake rightly refuses from a host of its own.
        torch.set_num_threads(cpu_threads.for_ranks(local_ranks))
    # A rank stuck in a collective fails after this long instead of hanging (the launcher's
    # process group is also killed by the probe on its own timeout).
    dist.init_process_group(backend, rank=rank, world_size=world_size,
                            timeout=timedelta(seconds=float(config["timeout_s"])),
                            device_id=device if cuda else None)
    try:
        result = measure_distributed(rank, world_size, device, config, local_rank == 0)
        result |= {"backend": backend, "torch_version": torch.__version__,
                   "requested_ranks": config["requested_ranks"], "world_size": world_size,
                   "nnodes": int(config.get("nnodes", 1)), "local_ranks": local_ranks,
                   "device": str(device.type),
                   "socket_ifname": {k: os.environ.get(k, "") for k in SOCKET_IFNAME_VARS}}
        if local_rank == 0:  # every node reports; the timings are the slowest rank's anyway
            with open(result_path, "w") as fh:
                json.dump(result, fh)
        dist.barrier()
    finally:
        dist.destroy_process_group()
    # Done, and the process group destroyed: leave now, without the interpreter's teardown.
    # In it torch aborted about one run in thirty on this machine ("terminate called without
    # an active exception", SIGABRT) after both ranks had measured and destroyed their group,
    # and the launcher failed a finished measurement. A failure above still raises, for
    # spawn to report with its traceback.
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(0)


def measure_distributed(rank: int, world_size: int, device: Any, config: dict[str, Any],
                        samples_gpus: bool) -> dict[str, Any]:
    import torch

    cuda = device.type == "cuda"

    def sync() -> None:
        if cuda:
            torch.cuda.synchronize(device)

    result = measure_ddp(rank, world_size, device, config, sync, samples_gpus)
    if cuda:
        torch.cuda.empty_cache()  # the model is gone: give its memory to the all-reduce buffers
    if world_size < 2:
        result["comm_skipped"] = "skipped: one rank (one GPU); all-reduce needs two or more"
        return result
    result["allreduce"] = measure_allreduce(world_size, device, config, sync)
    return result


def measure_ddp(rank: int, world_size: int, device: Any, config: dict[str, Any],
                sync: Callable[[], None], samples_gpus: bool) -> dict[str, Any]:
    import torch
    import torch.distributed as dist
    from torch.nn.parallel import DistributedDataParallel as DDP

    from benchmarks.nvml import NvmlSampler
    from benchmarks.probes import training_models

    torch.manual_seed(int(config.get("seed", 0)) + rank)
    cuda = device.type == "cuda"
    batch = int(config["batch"])
    work = training_models.build(str(config.get("training_model", "mlp")),
                                 int(config["model_mib"]), batch, device)
    ddp = DDP(work.model, device_ids=[device.index] if cuda else None)
    opt = torch.optim.SGD(ddp.parameters(), lr=1e-4)

    def micro(step_sync: bool) -> None:
        # no_sync skips the gradient all-reduce; the forward and backward are the same.
        if step_sync:
            work.loss(ddp(work.inputs)).backward()
        else:
            with ddp.no_sync():
                work.loss(ddp(work.inputs)).backward()

    def cycle(accum: int, all_local: bool) -> float:
        """One optimizer step over ``accum`` micro-steps; the last syncs unless ``all_local``."""
        sync()
        # Every rank starts the cycle together, as consecutive training steps do (the last
        # step's all-reduce lines them up). Without it a synced cycle after an unsynced one
        # would also time the wait for ranks still finishing that one: on hosts sharing
        # cores that wait was 100-200 ms a step, none of it communication.
        dist.barrier()
        start = time.perf_counter()
        for i in range(accum):
            micro(step_sync=(i == accum - 1) and not all_local)
        opt.step()
        opt.zero_grad(set_to_none=True)
        sync()
        return (time.perf_counter() - start) * 1000.0

    train_steps = int(config["train_steps"])
    for _ in range(WARMUP_STEPS):
        cycle(1, all_local=False)
        cycle(1, all_local=True)
    buckets = training_models.ddp_buckets(ddp)  # as rebuilt after the first synced backward
    # One sampler per host, in its first local rank, over the host's own GPUs.
    sampler = NvmlSampler(period_s=float(config["nvml_period_s"]),
                          devices=list(range(int(config["local_ranks"])))) if samples_gpus else None
    if sampler is not None:
        sampler.start()
    accum_times: dict[int, dict[str, list[float]]] = {}
    step_ms: list[float] = []
    compute_ms: list[float] = []
    # Synced and local steps alternate so that drift (clocks, thermals) hits both alike.
    for _ in range(train_steps):
        step_ms.append(cycle(1, all_local=False))
        compute_ms.append(cycle(1, all_local=True))
    summary = sampler.stop() if sampler is not None else None
    accum_times[1] = {"sync_ms": step_ms, "nosync_ms": compute_ms}
    for accum in ACCUMULATIONS[1:]:
        # About train_steps micro-steps per setting, and at least 3 optimizer steps.
        cycles = max(3, math.ceil(train_steps / accum))
        cycle(accum, all_local=False)  # warm-up for this pattern
        sync_times, local_times = [], []
        for _ in range(cycles):
            sync_times.append(cycle(accum, all_local=False))
            local_times.append(cycle(accum, all_local=True))
        accum_times[accum] = {"sync_ms": sync_times, "nosync_ms": local_times}

    # A step lasts as long as its slowest rank: take the per-step maximum over ranks (a
    # tensor all-reduce, not all_gather_object, which needs numpy).
    def slowest(values: list[float]) -> list[float]:
        times = torch.tensor(values, dtype=torch.float64, device=device)
        dist.all_reduce(times, op=dist.ReduceOp.MAX)
        return [float(v) for v in times.cpu().tolist()]

    accum_out = {str(k): {"sync_ms": slowest(v["sync_ms"]), "nosync_ms": slowest(v["nosync_ms"])}
                 for k, v in accum_times.items()}
    result: dict[str, Any] = {
        "step_ms": accum_out["1"]["sync_ms"], "compute_ms": accum_out["1"]["nosync_ms"],
        "accum": accum_out, "batch_size": batch, "warmup_steps": WARMUP_STEPS,
        "model": work.name, "model_params": work.params, "model_shape": work.shape,
        "gradient_bytes": work.gradient_bytes, **buckets,
        "nvml_period_s": float(config["nvml_period_s"]), "repetitions": int(config["repetitions"]),
    }
    if sampler is not None:
        result["gpu_utilization"] = asdict(summary) if summary is not None else sampler.skipped
    return result


def measure_allreduce(world_size: int, device: Any, config: dict[str, Any],
                      sync: Callable[[], None]) -> list[dict[str, Any]]:
    import torch
    import torch.distributed as dist

    reps = int(config["repetitions"])
    curve: list[dict[str, Any]] = []
    for size_mib in message_sizes_mib(int(config["allreduce_max_mib"])):
        nbytes = size_mib * MIB
        tensor = torch.ones(nbytes // 4, dtype=torch.float32, device=device)
        for _ in range(ALLREDUCE_WARMUP):  # connections, buffers and algorithm for this size
            dist.all_reduce(tensor)
        times = []
        for _ in range(reps):
            dist.barrier()  # all ranks start together, so the time is the collective's
            sync()
            start = time.perf_counter()
            dist.all_reduce(tensor)
            sync()
            times.append(time.perf_counter() - start)
        # The collective ends when its slowest rank does.
        slowest = torch.tensor(times, dtype=torch.float64, device=device)
        dist.all_reduce(slowest, op=dist.ReduceOp.MAX)
        secs = slowest.cpu().tolist()
        algbw = [nbytes / s / GB for s in secs]
        curve.append({"size_mib": size_mib, "seconds": secs, "algbw_gbs": algbw,
                      "busbw_gbs": [a * busbw_factor(world_size) for a in algbw]})
        del tensor
    return curve
