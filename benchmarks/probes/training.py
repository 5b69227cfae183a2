"""Training probe: DDP step time and comm share, all-reduce bus bandwidth, input pipeline, GPU use.

Everything runs in a launcher subprocess started through ``benchmarks.runner``: the launcher
is the leader of its own process group and the ranks it spawns (torch.multiprocessing) are in
that group, so on timeout or cancellation one killpg leaves no orphan rank behind, even one
hung inside a collective. torch is imported only inside functions, so importing this module
(as the idle worker does) stays cheap.
"""

from __future__ import annotations

import json
import math
import os
import socket
import statistics
import sys
import tempfile
import time
import zlib
from collections.abc import Callable
from dataclasses import asdict
from datetime import timedelta
from pathlib import Path
from typing import Any, cast

from benchmarks import runner
from benchmarks.probes.base import Probe, ProbeError
from benchmarks.sample import Sample, single, summarise
from contract import metrics

MIB = 1 << 20
GB = 1e9
WARMUP_STEPS = 3
ALLREDUCE_WARMUP = 5  # nccl-tests' default -w: the first calls at a size set up buffers
ACCUMULATIONS = (1, 4, 8)
DATALOADER_BATCH = 32
SOCKET_IFNAME_VARS = ("GLOO_SOCKET_IFNAME", "NCCL_SOCKET_IFNAME")
NO_GPU = "skipped: no NVIDIA GPU"
PROJECT_ROOT = Path(__file__).resolve().parents[2]

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


def comm_share(step_ms: float, compute_ms: float) -> float:
    # Clamped: noise can make a no-sync step slower than a synced one when comm is ~free.
    return min(1.0, max(0.0, (step_ms - compute_ms) / step_ms)) if step_ms > 0 else 0.0


class TrainingProbe(Probe):
    name = "training"
    produces = metrics.family("training")

    def prepare(self) -> None:
        try:
            import torch.distributed as dist  # noqa: F401 - only checking it is there
        except ImportError as exc:
            raise ProbeError(f"torch is not installed or lacks torch.distributed: {exc}") from None

    def run(self) -> list[Sample]:
        steps = 2
        self.ctx.report(self.name, 0, steps)
        config: dict[str, Any] = {
            "world_size": int(self.param("training_ranks")),
            "model_mib": int(self.param("model_mib")),
            "train_steps": int(self.param("train_steps")),
            "batch": int(self.param("training_batch")),
            "allreduce_max_mib": int(self.param("allreduce_max_mib")),
            "repetitions": int(self.param("repetitions")),
            "nvml_period_s": self.param("nvml_period_ms") / 1000.0,
            "dataloader_samples": int(self.param("dataloader_samples")),
            "timeout_s": self.param("training_timeout"),
            "seed": int(self.ctx.params.get("seed", 0)),
        }
        if self.ctx.multi_node and self.ctx.rendezvous:
            config |= {"nnodes": int(self.ctx.rendezvous["nnodes"]), "node_rank": self.ctx.node_rank,
                       "master_addr": self.ctx.rendezvous["master_addr"],
                       "master_port": int(self.ctx.rendezvous["master_port"])}
            # All nodes start their ranks together; one that never comes is named here
            # instead of surfacing as a rendezvous timeout.
            self.ctx.barrier("training-start")
        dist_result = self.launch("distributed", config)
        self.ctx.report(self.name, 1, steps)
        data_result = self.launch("dataloader", config)
        self.ctx.report(self.name, 2, steps)
        return distributed_samples(dist_result) + dataloader_samples(data_result)

    def launch(self, phase: str, config: dict[str, Any]) -> dict[str, Any]:
        with tempfile.TemporaryDirectory(prefix="bench-training-") as tmp:
            result_path = os.path.join(tmp, "result.json")
            argv = [sys.executable, "-c",
                    "from benchmarks.probes.training import launcher_main; launcher_main()",
                    phase, json.dumps(config), result_path]
            env = dict(os.environ)
            # The launcher and the ranks spawn imports this package by name, from anywhere.
            env["PYTHONPATH"] = os.pathsep.join(
                p for p in (str(PROJECT_ROOT), env.get("PYTHONPATH", "")) if p)
            try:
                result = runner.run(argv, timeout=float(config["timeout_s"]), env=env)
            except runner.CommandTimeout as exc:
                raise ProbeError(f"training {phase} phase: {exc}; its processes were killed") from None
            if result.returncode != 0 or not os.path.exists(result_path):
                tail = (result.stderr or result.stdout).strip()[-2000:]
                raise ProbeError(f"training {phase} phase failed (exit {result.returncode}): {tail}")
            with open(result_path) as fh:
                data: dict[str, Any] = json.load(fh)
            return data


# --- turning raw results into samples --------------------------------------------------------


def distributed_samples(res: dict[str, Any]) -> list[Sample]:
    meta: dict[str, Any] = {k: res[k] for k in (
        "backend", "world_size", "nnodes", "local_ranks", "requested_ranks", "torch_version",
        "device", "model_params",
        "model_layers", "model_width", "batch_size", "warmup_steps") if k in res}
    meta["socket_ifname"] = {k: v for k, v in res.get("socket_ifname", {}).items() if v}
    samples: list[Sample] = []
    step_ms: list[float] = res["step_ms"]
    compute_ms: list[float] = res["compute_ms"]
    step_meta = dict(meta)
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
    samples.append(summarise("training.samples_per_s", [per_step / (ms / 1000.0) for ms in step_ms], meta))
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


# --- launcher (runs in the subprocess) -------------------------------------------------------


def launcher_main() -> None:
    phase, config_json, result_path = sys.argv[1:4]
    config: dict[str, Any] = json.loads(config_json)
    if phase == "dataloader":
        result = measure_dataloader(config)
        with open(result_path, "w") as fh:
            json.dump(result, fh)
        return
    if phase != "distributed":
        raise SystemExit(f"unknown phase {phase!r}")
    import torch
    import torch.multiprocessing as mp

    requested = int(config["world_size"])
    local_ranks = requested
    if torch.cuda.is_available():
        # NCCL refuses two ranks on one GPU: use as many ranks as there are GPUs.
        local_ranks = min(requested, torch.cuda.device_count())
    nnodes = int(config.get("nnodes", 1))
    config = config | {"local_ranks": local_ranks, "world_size": local_ranks * nnodes,
                       "requested_ranks": requested}
    # One node: a private rendezvous on loopback. Several: the platform's (node 0's address).
    os.environ["MASTER_ADDR"] = str(config.get("master_addr") or "127.0.0.1")
    os.environ["MASTER_PORT"] = str(config.get("master_port") or free_port())
    # join=True: if one rank raises, spawn terminates the others and re-raises here (exit != 0).
    mp.spawn(rank_main, args=(config, result_path), nprocs=local_ranks, join=True)


def free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


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
        device = torch.device("cuda", local_rank % torch.cuda.device_count())
        torch.cuda.set_device(device)
    else:
        device = torch.device("cpu")
        # Ranks share the cores: without this each would start one thread per core and
        # the figures would measure oversubscription.
        torch.set_num_threads(max(1, (os.cpu_count() or 1) // local_ranks))
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


def build_mlp(model_mib: int) -> tuple[Any, int, int]:
    """An MLP of square Linear layers with about ``model_mib`` MiB of fp32 parameters."""
    import torch

    params = model_mib * MIB // 4
    # About 8 layers: deep enough that DDP's bucketed all-reduce can overlap backward.
    width = max(64, int(math.sqrt(params / 8)) // 64 * 64)
    layers = max(1, round(params / (width * width + width)))
    modules: list[torch.nn.Module] = []
    for i in range(layers):
        modules.append(torch.nn.Linear(width, width))
        if i < layers - 1:
            modules.append(torch.nn.ReLU())
    return torch.nn.Sequential(*modules), width, layers


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

    torch.manual_seed(int(config.get("seed", 0)) + rank)
    cuda = device.type == "cuda"
    model, width, layers = build_mlp(int(config["model_mib"]))
    model = model.to(device)
    ddp = DDP(model, device_ids=[device.index] if cuda else None)
    opt = torch.optim.SGD(ddp.parameters(), lr=1e-4)
    batch = int(config["batch"])
    x = torch.randn(batch, width, device=device)
    y = torch.randn(batch, width, device=device)

    def micro(step_sync: bool) -> None:
        # no_sync skips the gradient all-reduce; the forward and backward are the same.
        if step_sync:
            torch.nn.functional.mse_loss(ddp(x), y).backward()
        else:
            with ddp.no_sync():
                torch.nn.functional.mse_loss(ddp(x), y).backward()

    def cycle(accum: int, all_local: bool) -> float:
        """One optimizer step over ``accum`` micro-steps; the last syncs unless ``all_local``."""
        sync()
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
        "model_params": sum(p.numel() for p in model.parameters()), "model_layers": layers,
        "model_width": width, "nvml_period_s": float(config["nvml_period_s"]),
        "repetitions": int(config["repetitions"]),
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


# --- input pipeline ---------------------------------------------------------------------------


class SyntheticImages:
    """A map-style dataset whose items cost what decoding a small compressed image costs.

    Each item inflates a zlib blob (like PNG) and converts it to a normalised float tensor.
    Top-level and picklable, because DataLoader workers receive it.
    """

    def __init__(self, length: int, side: int = 224) -> None:  # an ImageNet-sized crop
        self.length = length
        self.side = side
        raw = bytes((i * 31 + (i >> 7) * 17) % 251 for i in range(3 * side * side))
        # Low compression level: realistic ratio, and a decode cost that dominates the item.
        self.blob = zlib.compress(raw, 1)

    def __len__(self) -> int:
        return self.length

    def __getitem__(self, index: int) -> Any:
        import torch

        raw = bytearray(zlib.decompress(self.blob))
        img = torch.frombuffer(raw, dtype=torch.uint8).reshape(3, self.side, self.side)
        img = img.float().div_(255.0)
        if index % 2:
            img = img.flip(2)  # the usual random flip, deterministic here
        return (img - img.mean()) / (img.std() + 1e-6)


def dataloader_settings(cpu_count: int) -> list[tuple[int, int | None]]:
    workers = sorted({0, max(0, cpu_count // 2), max(0, cpu_count - 1)})
    return [(w, pf) for w in workers for pf in ((None,) if w == 0 else (2, 4))]


def measure_dataloader(config: dict[str, Any]) -> dict[str, Any]:
    import torch
    from torch.utils.data import DataLoader

    # A decoder runs single-threaded, as DataLoader workers do: same for num_workers=0.
    torch.set_num_threads(1)
    cpu_count = os.cpu_count() or 1
    samples = int(config["dataloader_samples"])
    dataset = SyntheticImages(samples)
    table: list[dict[str, Any]] = []
    for workers, prefetch in dataloader_settings(cpu_count):
        # cast: the dataset is a plain class so that importing this module needs no torch.
        loader: Any = DataLoader(cast(Any, dataset), batch_size=DATALOADER_BATCH, shuffle=False,
                                 num_workers=workers, prefetch_factor=prefetch)
        it = iter(loader)
        next(it)  # not timed: worker start-up is a one-off, not throughput
        count = 0
        start = time.perf_counter()
        for batch in it:
            count += int(batch.shape[0])
        elapsed = time.perf_counter() - start
        del it, loader
        if count == 0:
            raise RuntimeError(f"dataloader_samples={samples} is under two batches of {DATALOADER_BATCH}")
        table.append({"num_workers": workers, "prefetch_factor": prefetch,
                      "samples_per_s": count / elapsed, "seconds": elapsed})
    return {"table": table, "cpu_count": cpu_count, "samples": samples,
            "batch_size": DATALOADER_BATCH, "sample_bytes": 3 * dataset.side * dataset.side,
            "torch_version": torch.__version__}
