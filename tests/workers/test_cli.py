"""benchctl driven as a subprocess against a running test platform."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from lab.procs import REPO
from tests.fixtures import measured

pytestmark = pytest.mark.slow


def benchctl(*args: str, env: dict[str, str] | None = None,
             timeout: float = 120) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "workers.cli", *args], cwd=REPO, timeout=timeout,
                          capture_output=True, text=True, check=False,
                          env={**os.environ, "COLUMNS": "200", **(env or {})})


def test_submit_waits_with_progress_and_prints_the_results(
        live_server: Any, buyer: Any, enrol_node: Any, worker_factory: Any) -> None:
    node = enrol_node("hz-1", api_url=live_server.url)
    worker_factory(node.config_path, "w-cli")
    env = {"BENCH_URL": live_server.url, "BENCH_TOKEN": buyer.token}
    done = benchctl("submit", "--nodes", str(node.node.pk), "--suite", "noop", "--wait",
                    "--format", "json", env=env)
    assert done.returncode == 0, done.stdout + done.stderr
    rows = json.loads(done.stdout[done.stdout.index("["):])
    assert [r["metric"] for r in rows] == ["noop.duration"] and rows[0]["node"] == "hz-1"
    job_id = done.stdout.split()[1]
    csv_out = benchctl("results", job_id, "--format", "csv", env=env)
    assert csv_out.stdout.splitlines()[0] == "node,metric,value,unit,p5,p95,n,peer"
    status = benchctl("status", job_id, env=env)
    assert "succeeded" in status.stdout


def test_flags_win_over_the_environment_and_errors_are_one_line_with_the_fix(
        live_server: Any, buyer: Any, tmp_path: Path) -> None:
    env = {"BENCH_URL": "http://127.0.0.1:9", "BENCH_TOKEN": "wrong",
           "BENCH_CLIENT_CONFIG": str(tmp_path / "none.json")}
    unreachable = benchctl("leaderboard", env=env)
    assert unreachable.returncode == 2
    assert unreachable.stderr.strip().startswith("benchctl: cannot reach http://127.0.0.1:9")
    assert "Traceback" not in unreachable.stderr
    refused = benchctl("leaderboard", "--url", live_server.url, env=env)
    assert "refused the token" in refused.stderr and refused.returncode == 2
    ok = benchctl("leaderboard", "--url", live_server.url, "--token", buyer.token, env=env)
    assert ok.returncode == 0, ok.stderr
    missing = benchctl("leaderboard", env={"BENCH_URL": "", "BENCH_TOKEN": "",
                                           "BENCH_CLIENT_CONFIG": str(tmp_path / "none.json")})
    assert "no platform URL: pass --url, set BENCH_URL" in missing.stderr


def test_compare_names_the_winner_per_metric(live_server: Any, buyer: Any, enrol_node: Any) -> None:
    a, b = enrol_node("hz-1"), enrol_node("hz-2")
    measured(buyer, a, 9.0, extra={"network.tcp_rtt": 4.0})
    measured(buyer, b, 1.0, extra={"network.tcp_rtt": 2.0})
    done = benchctl("compare", str(a.node.pk), str(b.node.pk), "--format", "json",
                    env={"BENCH_URL": live_server.url, "BENCH_TOKEN": buyer.token})
    rows = {r["metric"]: r for r in json.loads(done.stdout)}
    assert rows["network.tcp_throughput"]["winner"] == "hz-1"
    assert rows["network.tcp_rtt"]["winner"] == "hz-2"


def test_doctor_checks_the_host_and_the_stored_credentials(live_server: Any, enrol_node: Any) -> None:
    node = enrol_node("hz-1", api_url=live_server.url)
    done = benchctl("--config", str(node.config_path), "doctor")
    lines = done.stdout.splitlines()
    assert any(line.startswith("ok   iperf3: iperf 3") for line in lines), done.stdout
    assert any(line.startswith("ok   API with node key") for line in lines)
    assert any(line.startswith("ok   broker with node credentials") for line in lines)
    assert any(line.startswith("ok   heartbeat over the broker") for line in lines)
    assert any("NVML / GPU" in line for line in lines)


def test_doctor_says_when_a_nodes_broker_user_predates_broker_heartbeats(
        live_server: Any, enrol_node: Any, private_redis: Any) -> None:
    node = enrol_node("hz-old", api_url=live_server.url)
    # A user made before its ACL had the liveness key: its queue's keys only.
    private_redis.client().execute_command("ACL", "SETUSER", f"node-{node.node.pk}", "resetkeys",
                                           f"~node:{node.node.pk}:runs")
    lines = benchctl("--config", str(node.config_path), "doctor").stdout.splitlines()
    assert any(line.startswith("FIX  heartbeat over the broker") for line in lines), lines
