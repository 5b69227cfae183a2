"""`make demo`: the platform, two enrolled node workers, a network benchmark, the leaderboard.

Every process is real and started here: a private Redis with per-node ACL users, gunicorn,
the platform worker (with the sweeper), iperf3 reference endpoints, and two node workers
enrolled through the real path (`benchctl enroll`). Ctrl-C stops all of them.
"""

from __future__ import annotations

import argparse
import json
import os
import secrets
import shutil
import subprocess
import sys
import time
from typing import Any

import requests

from tests.lab import procs

REPO = procs.REPO
VAR = REPO / "var" / "demo"
PARAMS = {"iperf3_duration": 3, "iperf3_omit": 1, "repetitions": 3, "ping_count": 10}


def say(message: str) -> None:
    print(f"==> {message}", flush=True)


def fresh_database_url() -> str:
    """DATABASE_URL when given; else a demo database made anew, so each demo starts clean."""
    if os.environ.get("DATABASE_URL"):
        return os.environ["DATABASE_URL"]
    if shutil.which("pg_isready") and subprocess.run(
            ["pg_isready", "-q", "-h", "127.0.0.1"], check=False).returncode == 0:
        pg = ["-h", "127.0.0.1", "-U", "postgres"]
        subprocess.run(["dropdb", *pg, "--if-exists", "--force", "benchdemo"], check=True)
        subprocess.run(["createdb", *pg, "benchdemo"], check=True)
        return "postgres://postgres@127.0.0.1:5432/benchdemo"
    say("PostgreSQL is not running here: the demo uses an SQLite file instead")
    return f"sqlite:///{VAR / 'demo.sqlite3'}"


class Demo:
    def __init__(self) -> None:
        self.started: list[procs.Proc] = []
        shutil.rmtree(VAR, ignore_errors=True)  # credentials of an earlier demo's nodes
        VAR.mkdir(parents=True, exist_ok=True)
        self.logs = VAR / "logs"

    def keep(self, proc: procs.Proc) -> procs.Proc:
        self.started.append(proc)
        return proc

    def stop_all(self) -> None:
        for proc in reversed(self.started):
            proc.stop(timeout=5)
        say(f"stopped {len(self.started)} processes; logs are in {self.logs}")

    def manage(self, env: dict[str, str], *args: str) -> str:
        done = subprocess.run([sys.executable, "manage.py", *args], cwd=REPO, env=env,
                              capture_output=True, text=True, check=False)
        if done.returncode != 0:
            raise SystemExit(f"manage.py {' '.join(args)} failed:\n{done.stderr}")
        return done.stdout

    def run(self, wait: bool) -> None:
        env = {**os.environ, "DATABASE_URL": fresh_database_url(), "PYTHONUNBUFFERED": "1",
               "SWEEP_INTERVAL_SECONDS": "5", "RUN_LEASE_SECONDS": "30",
               "NODE_VISIBILITY_TIMEOUT": "600", "PYTHONPATH": str(REPO)}
        if shutil.which("redis-server"):
            redis = procs.start_private_redis(VAR / "redis", secrets.token_hex(16))
            self.keep(redis.proc)
            env |= {"REDIS_URL": redis.admin_url, "NODE_BROKER_ACL": "true"}
            say(f"private Redis on port {redis.port}: password-protected, one ACL user per node")
        else:
            env |= {"NODE_BROKER_ACL": "false"}
            say("WARNING: redis-server not found; using REDIS_URL without per-node users")
        web_port = procs.free_port()
        api = f"http://127.0.0.1:{web_port}"
        env["PUBLIC_API_URL"] = api

        say("migrating the database")
        self.manage(env, "migrate", "--noinput")
        ports = {"hangzhou": procs.free_port(), "shenzhen": procs.free_port()}
        for region, port in ports.items():
            self.keep(procs.start_iperf3_server(port, self.logs))
            say(f"reference endpoint for {region}: iperf3 -s on 127.0.0.1:{port}")
        seed = json.loads(self.manage(env, "seed_demo", *[
            f"--endpoint={region}=127.0.0.1:{port}" for region, port in ports.items()]))

        self.keep(procs.start("web", [
            sys.executable, "-m", "gunicorn", "config.wsgi", "-b", f"127.0.0.1:{web_port}",
            "-w", "2", "--access-logfile", "-"], self.logs, env))
        self.keep(procs.start("platform-worker", [
            sys.executable, "-m", "celery", "-A", "config.celery_app", "worker", "-B",
            "-Q", "platform", "-c", "1", "--loglevel", "INFO",
            "-s", str(VAR / "celerybeat-schedule")], self.logs, env))
        procs.wait_for(lambda: _up(f"{api}/api/v1/health"), 30, "the web server")
        say(f"platform up at {api}")

        node_ids = []
        for region, name in (("hangzhou", "hz-a100-01"), ("shenzhen", "sz-a100-01")):
            node_ids.append(self.enrol(api, seed["providers"][region], region, name, env))
        job = self.benchmark(api, seed["buyer_token"], node_ids)
        print_comparison(job)
        say(f"leaderboard: {api}/   API: {api}/api/v1/leaderboard?metric=network.tcp_throughput")
        say(f"buyer token for curl: {seed['buyer_token']}")
        if wait:
            say("press Ctrl-C to stop everything")
            while True:
                time.sleep(3600)

    def enrol(self, api: str, provider: dict[str, Any], region: str, name: str,
              env: dict[str, str]) -> int:
        """The provider's token, then `benchctl enroll` and `benchctl worker`, as on a host."""
        headers = {"Authorization": f"Token {provider['token']}"}
        config = VAR / f"{name}.json"
        response = requests.post(
            f"{api}/api/v1/providers/{provider['id']}/enrolment-tokens", headers=headers,
            json={"region": region, "node_name": name}, timeout=10)
        if response.status_code == 409:  # DATABASE_URL given, and this name is taken
            name = f"{name}-{secrets.token_hex(2)}"
            response = requests.post(
                f"{api}/api/v1/providers/{provider['id']}/enrolment-tokens", headers=headers,
                json={"region": region, "node_name": name}, timeout=10)
        response.raise_for_status()
        subprocess.run([sys.executable, "-m", "workers.cli", "--config", str(config), "enroll",
                        "--url", api, "--token", response.json()["token"]],
                       cwd=REPO, env=env, check=True)
        worker = self.keep(procs.start_node_worker(config, self.logs, f"node-{name}"))
        procs.wait_worker_ready(worker)
        node_id = int(json.loads(config.read_text())["node_id"])
        say(f"node worker for {provider['name']} / {name} (node {node_id}) is consuming its queue")
        return node_id

    def benchmark(self, api: str, token: str, node_ids: list[int]) -> dict[str, Any]:
        headers = {"Authorization": f"Token {token}"}
        response = requests.post(f"{api}/api/v1/benchmarks", headers=headers, timeout=10,
                                 json={"nodes": node_ids, "suite": "network", "params": PARAMS})
        response.raise_for_status()
        url = response.json()["url"]
        say(f"submitted a network benchmark: {url}")
        last = ""
        while True:
            job: dict[str, Any] = requests.get(url, headers=headers, timeout=10).json()
            line = "  ".join(f"{r['node']['name']}: {r['status']} {_progress(r)}" for r in job["runs"])
            if line != last:
                print(f"    {line}", flush=True)
                last = line
            if job["status"] not in ("queued", "running"):
                return job
            time.sleep(0.5)


def _progress(run: dict[str, Any]) -> str:
    p = run.get("progress") or {}
    if run["status"] != "running" or not p:
        return ""
    return f"[{p.get('probe')} {p.get('step')}/{p.get('steps')}]"


def _up(url: str) -> bool:
    try:
        return requests.get(url, timeout=2).status_code == 200
    except requests.RequestException:
        return False


def print_comparison(job: dict[str, Any]) -> None:
    print()
    print(f"{'node':<16}{'provider':<20}{'region':<22}{'RTT ms':>10}{'TCP Gbit/s':>12}"
          f"{'reverse':>10}")
    for run in job["runs"]:
        node = run["node"]
        figures = {s["metric"]: s["value"] for s in run["samples"]}
        if run["status"] != "succeeded":
            print(f"{node['name']:<16}{run['status']}: {run['error']}")
            continue
        print(f"{node['name']:<16}{node['provider']:<20}{node['province'] + '/' + node['city']:<22}"
              f"{figures.get('network.icmp_rtt_avg', float('nan')):>10.3f}"
              f"{figures.get('network.tcp_throughput', float('nan')):>12.2f}"
              f"{figures.get('network.tcp_throughput_reverse', float('nan')):>10.2f}")
    print()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--no-wait", action="store_true",
                        help="stop everything after printing the comparison")
    args = parser.parse_args()
    demo = Demo()
    try:
        demo.run(wait=not args.no_wait)
    except KeyboardInterrupt:
        print()
    finally:
        demo.stop_all()


if __name__ == "__main__":
    main()
