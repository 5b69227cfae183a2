"""The node's credentials on the host: one JSON file, readable by its owner only."""

from __future__ import annotations

import json
import os
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from contract.tasks import LIVENESS_KEY

DEFAULT_PATH = Path(os.environ.get("BENCH_NODE_CONFIG",
                                   Path.home() / ".config" / "benchctl" / "node.json"))


class ConfigError(Exception):
    pass


@dataclass(frozen=True)
class NodeConfig:
    node_id: int
    node_name: str
    api_url: str
    api_key: str
    broker_url: str
    queue: str
    broker_transport_options: dict[str, Any] = field(default_factory=dict)
    broker_acl: bool = True
    heartbeat_seconds: int = 30
    address: str = ""  # where other nodes reach this host; empty: no node-to-node tests
    iperf3_port: int = 5201
    # A buyer's trial agent: the provider's node it measures, and when its key stops working.
    trial_of: int | None = None
    trial_ends_at: str = ""

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> NodeConfig:
        known = {k: data[k] for k in cls.__dataclass_fields__ if k in data}
        try:
            return cls(**known)
        except TypeError as exc:
            raise ConfigError(f"node config is incomplete ({exc}); run `benchctl enroll` again") from None


def liveness_key(config: NodeConfig) -> str:
    """The key its heartbeat sets on its broker (contract.tasks.LIVENESS_KEY, its prefix)."""
    prefix = config.broker_transport_options.get("global_keyprefix", f"node:{config.node_id}:")
    return f"{prefix}{LIVENESS_KEY}"


def save(config: NodeConfig, path: Path = DEFAULT_PATH) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    # Created 0600 from the start: the key must never be readable by others, not even briefly.
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(fd, "w") as fh:
        json.dump(asdict(config), fh, indent=2)
    os.chmod(path, 0o600)
    return path


def load(path: Path = DEFAULT_PATH) -> NodeConfig:
    try:
        data = json.loads(path.read_text())
    except FileNotFoundError:
        raise ConfigError(f"no node config at {path}; run "
                          "`benchctl enroll --url URL --token TOKEN` first") from None
    except json.JSONDecodeError as exc:
        raise ConfigError(f"node config {path} is not valid JSON ({exc}); enrol again") from None
    return NodeConfig.from_dict(data)
