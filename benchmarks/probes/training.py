"""Training probe: DDP step time and comm share, all-reduce bus bandwidth, input pipeline, GPU use.

Each phase runs in a launcher child started through benchmarks.probes.isolated: the launcher
is the leader of its own process group and the ranks it spawns (torch.multiprocessing) are in
that group, so on timeout or cancellation one killpg leaves no orphan rank behind, even one
hung inside a collective. This module is the probe and the launcher; the ranks' measurement
is in training_ddp (what they train in training_models), the input pipeline's in
training_dataloader, and the samples are made in training_samples. On NCCL each rank logs
NCCL's init to a file in the launcher's temp dir, and the launcher reads from those logs the
transport NCCL really used (benchmarks.parsers.nccl). torch is imported only inside
functions, so importing this module (as the idle worker does) stays cheap.
"""

from __future__ import annotations

import json
import os
import socket
import tempfile
from pathlib import Path
from typing import Any

from benchmarks.parsers import ParseError
from benchmarks.parsers.nccl import parse_nccl_log
from benchmarks.probes import isolated
from benchmarks.probes.base import Probe, ProbeError
from benchmarks.probes.training_ddp import NCCL_LOG_NAME
from benchmarks.probes.training_samples import dataloader_samples, distributed_samples
from contract import metrics, suites
from contract.sample import Sample

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
            "training_model": suites.choice("training_model",
                                            self.ctx.params.get("training_model", 0)),
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
        try:
            mp.spawn(rank_main, args=(config | {"log_dir": tmp}, result_path),
                     nprocs=local_ranks, join=True)
        except Exception as exc:
            # NCCL's warnings went to its log files, not stderr: end the traceback with them.
            said = nccl_warnings(Path(tmp))
            if not said:
                raise
            raise RuntimeError(f"{exc}\nNCCL's log: {said}") from exc
        with open(result_path) as fh:
            result: dict[str, Any] = json.load(fh)
        # The ranks have exited: their NCCL logs are complete.
        result |= transport(result, Path(tmp))
    return result


def transport(result: dict[str, Any], log_dir: Path) -> dict[str, Any]:
    """How this node's ranks exchanged data: NCCL's own account from its logs, or gloo's TCP
    over the ranks' GLOO_SOCKET_IFNAME (gloo picks the hostname's address without it)."""
    if result["backend"] != "nccl":
        ifname = result.get("socket_ifname", {}).get("GLOO_SOCKET_IFNAME", "")
        return {"transport": "gloo/tcp", "net_device": ifname}
    text = "".join(p.read_text(errors="replace")
                   for p in sorted(log_dir.glob(NCCL_LOG_NAME.format(rank="*"))))
    try:
        log = parse_nccl_log(text)
    except ParseError as exc:
        return {"transport": None, "net_device": "", "transport_unknown": str(exc)}
    return {"transport": log.transport, "net_device": ",".join(log.net_devices),
            "nccl": {"version": log.version, "network": log.network, "channels": log.channels,
                     "gdr": log.gdr, "nvls_channels": log.nvls_channels,
                     "ib_disabled": log.ib_disabled, "no_ib_device": log.no_ib_device,
                     "devices": {k: list(v[:16]) for k, v in log.devices.items()}}}


def nccl_warnings(log_dir: Path, most: int = 5) -> str:
    """The last NCCL WARN lines the ranks logged ("" when none)."""
    lines = [line.strip() for p in sorted(log_dir.glob(NCCL_LOG_NAME.format(rank="*")))
             for line in p.read_text(errors="replace").splitlines() if "NCCL WARN" in line]
    return " | ".join(lines[-most:])


def free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])
