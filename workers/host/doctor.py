"""`benchctl doctor`: what a host needs to be a good node, each check with its fix."""

from __future__ import annotations

import json
import shutil
import time
from dataclasses import dataclass
from pathlib import Path

import requests

from benchmarks import runner
from workers.host import config as node_config
from workers.host import inventory
from workers.host.redis_transport import node_broker_url


@dataclass
class Check:
    name: str
    ok: bool
    detail: str
    fix: str = ""


def doctor(config_path: Path) -> list[Check]:
    """What a host needs to be a good node, and what to fix."""
    checks = []
    for tool, package in (("ping", "iputils-ping"), ("iperf3", "iperf3"), ("fio", "fio"),
                          ("tracepath", "iputils-tracepath"), ("ip", "iproute2")):
        path = shutil.which(tool)
        version = inventory.TOOL_VERSION_ARGS.get(tool)
        detail = ""
        if path and version:
            try:  # the probes' seam: a tool that hangs on --version cannot hang the doctor
                out = runner.run([tool, *version], timeout=10)
                said = (out.stdout or out.stderr).strip()
                detail = said.splitlines()[0] if said else ""
            except (runner.CommandNotFound, runner.CommandTimeout) as exc:
                detail = f"{tool} {' '.join(version)}: {exc}"
        checks.append(Check(tool, path is not None, detail or (path or "missing"),
                            "" if path else f"apt-get install {package}"))
    gpu = inventory.gpus()
    checks.append(Check("NVML / GPU", bool(gpu.get("available")),
                        json.dumps(gpu)[:200],
                        "" if gpu.get("available") else "GPU probes will say skipped; install the "
                        "NVIDIA driver if this host has a GPU"))
    try:
        import torch

        checks.append(Check("torch", True, f"{torch.__version__}, CUDA available: "
                                           f"{torch.cuda.is_available()}"))
    except ImportError:
        checks.append(Check("torch", False, "not installed", "pip install torch"))
    try:
        cfg = node_config.load(config_path)
    except node_config.ConfigError as exc:
        checks.append(Check("node config", False, str(exc), "benchctl enroll --url URL --token TOKEN"))
        return checks
    checks.append(Check("node config", True, f"node {cfg.node_id} ({cfg.node_name})"))
    try:
        response = requests.post(f"{cfg.api_url}/api/v1/node/heartbeat", timeout=10,
                                 headers={"Authorization": f"Node {cfg.api_key}"})
        ok = response.status_code == 200
        checks.append(Check("API with node key", ok, f"HTTP {response.status_code}",
                            "" if ok else "the key was refused: the node may be revoked; enrol again"))
        server_date = response.headers.get("Date")
        if server_date:
            from email.utils import parsedate_to_datetime

            skew = abs(time.time() - parsedate_to_datetime(server_date).timestamp())
            checks.append(Check("clock skew", skew < 5, f"{skew:.1f} s",
                                "" if skew < 5 else "sync the clock (chrony / systemd-timesyncd)"))
    except requests.RequestException as exc:
        checks.append(Check("API with node key", False, str(exc)[:200],
                            f"check that {cfg.api_url} is reachable from this host"))
    try:
        import redis

        client = redis.Redis.from_url(cfg.broker_url, socket_timeout=5)
        client.ping()
        checks.append(Check("broker with node credentials", True,
                            node_broker_url(cfg.broker_url).split("@")[-1]))
        try:
            client.set(node_config.liveness_key(cfg), int(time.time()), ex=max(3 * cfg.heartbeat_seconds, 10))
            checks.append(Check("heartbeat over the broker", True, node_config.liveness_key(cfg)))
        except redis.exceptions.NoPermissionError:
            checks.append(Check("heartbeat over the broker", False,
                                "refused: this node's broker user predates heartbeats over the "
                                "broker (its worker sends them over HTTPS instead)",
                                "enrol the host again (benchctl enroll) for the lighter path"))
    except Exception as exc:  # noqa: BLE001 - any broker failure is reported with its fix
        checks.append(Check("broker with node credentials", False, str(exc)[:200],
                            "check the broker address and that the node was not revoked"))
    return checks


def gpu_check() -> int:
    """`benchctl doctor --gpu`: the report of `make gpu-check` (benchmarks.gpu_check), printed;
    1 when a figure is low, the board has a fault or a part failed, 0 otherwise and without
    a GPU (it says so)."""
    from benchmarks import gpu_check as check

    return check.main([])
