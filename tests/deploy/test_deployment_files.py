"""The deployment files are valid: the compose file, the systemd unit, the ACL template."""

from __future__ import annotations

import os
import shutil
import subprocess

import pytest
import yaml

from fleet.services.broker import NODE_COMMANDS
from lab.procs import REPO

COMPOSE = REPO / "docker-compose.yml"
UNIT = REPO / "platform" / "systemd" / "benchctl-worker.service"


def compose_command() -> list[str] | None:
    if shutil.which("docker") and subprocess.run(["docker", "compose", "version"],
                                                 capture_output=True, check=False).returncode == 0:
        return ["docker", "compose"]
    if shutil.which("docker-compose"):
        return ["docker-compose"]
    return None


@pytest.mark.skipif(compose_command() is None, reason="neither `docker compose` nor docker-compose")
def test_the_compose_file_validates() -> None:
    env = {**os.environ, "SECRET_KEY": "s", "POSTGRES_PASSWORD": "p", "REDIS_PASSWORD": "r",
           "ALLOWED_HOSTS": "bench.example.cn", "METRICS_TOKEN": "m"}
    done = subprocess.run([*compose_command(), "-f", str(COMPOSE), "config"],  # type: ignore[misc]
                          capture_output=True, text=True, env=env, cwd=REPO, check=False)
    assert done.returncode == 0, done.stderr
    config = yaml.safe_load(done.stdout)
    assert {"postgres", "redis", "web", "worker", "beat", "reference"} <= set(config["services"])
    redis_command = " ".join(config["services"]["redis"]["command"]) if isinstance(
        config["services"]["redis"]["command"], list) else config["services"]["redis"]["command"]
    assert "noeviction" in redis_command and "--appendonly yes" in redis_command
    # The node users survive a restart: the ACL file is seeded once, never rewritten.
    assert "[ -f /data/users.acl ] ||" in redis_command
    assert "SECRET_KEY" not in (config["services"]["reference"].get("environment") or {})


def test_the_compose_file_refuses_to_start_without_its_secrets() -> None:
    command = compose_command()
    if command is None:
        pytest.skip("neither `docker compose` nor docker-compose")
    env = {k: v for k, v in os.environ.items() if k not in ("SECRET_KEY", "POSTGRES_PASSWORD")}
    done = subprocess.run([*command, "-f", str(COMPOSE), "config"], capture_output=True,
                          text=True, env=env, cwd=REPO, check=False)
    assert done.returncode != 0 and "SECRET_KEY" in done.stderr + done.stdout


@pytest.mark.skipif(shutil.which("systemd-analyze") is None, reason="systemd-analyze not here")
def test_the_systemd_unit_verifies() -> None:
    done = subprocess.run(["systemd-analyze", "verify", str(UNIT)], capture_output=True,
                          text=True, check=False)
    # It may complain that the binary is not installed on this machine; nothing else.
    problems = [line for line in done.stderr.splitlines()
                if line.strip() and "/opt/benchctl/venv/bin/benchctl" not in line]
    assert problems == [], done.stderr


def test_the_unit_restarts_on_failure_as_an_unprivileged_user() -> None:
    unit = UNIT.read_text()
    assert "Restart=on-failure" in unit and "User=benchctl" in unit
    assert "AmbientCapabilities=CAP_NET_RAW" in unit


def test_the_readme_states_the_acl_the_code_grants() -> None:
    readme = (REPO / "README.md").read_text()
    assert NODE_COMMANDS in readme
