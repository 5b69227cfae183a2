"""Training probe: DDP step time and comm share, all-reduce bus bandwidth, input pipeline, GPU use.

Each phase runs in a launcher child started through benchmarks.probes.isolated: the launcher
is the leader of its own process group and the ranks it spawns (torch.multiprocessing) are in
that group, so on timeout or cancellation one killpg leaves no orphan rank behind, even one
hung inside a collective. This module is the probe and the launcher; the ranks' measurement
is in training_ddp, the input pipeline's in training_dataloader, and the samples are made in
training_samples. torch is imported only inside functions, so importing this module (as the
idle worker does) stays cheap.
"""

from __future__ import annotations

import json
import os
import socket
import tempfile
from typing import Any

from benchmarks.probes import isolated
from benchmarks.probes.base import Probe, ProbeError
from benchmarks.probes.training_samples import dataloader_samples, distributed_samples
from benchmarks.sample import Sample
from contract import metrics

# What runs in the launcher child for each phase.
PHASES = {"distributed": "benchmarks.probes.training:launch_ranks",
          "dataloader": "benchmarks.probes.training_dataloader:measure_dataloader"}


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
        result: dict[str, Any] = isolated.call(PHASES[phase], config, float(config["timeout_s"]),
                                               what=f"training {phase} phase")
        return result


def launch_ranks(config: dict[str, Any]) -> dict[str, Any]:
    """In the launcher child: run this node's DDP ranks; their first rank's result."""
    import torch
    import torch.multiprocessing as mp

    from benchmarks.probes.training_ddp import rank_main

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
    with tempfile.TemporaryDirectory(prefix="bench-training-") as tmp:
        result_path = os.path.join(tmp, "rank0.json")
        # join=True: if one rank raises, spawn terminates the others and re-raises here
        # (the launcher exits non-zero and the probe reports the traceback's tail).
        mp.spawn(rank_main, args=(config, result_path), nprocs=local_ranks, join=True)
        with open(result_path) as fh:
            result: dict[str, Any] = json.load(fh)
    return result


def free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])
