"""The platform as real processes, for the demo, the lab and the benchmarks.

A private Redis with per-node ACL users, a PostgreSQL database made anew (on the machine's
server when one answers on 127.0.0.1:5432, else on a private one), migrations,
gunicorn, and the platform worker with its beat sweeper.
"""

from __future__ import annotations

import json
import os
import secrets
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import requests

from lab import procs

REPO = procs.REPO


def say(message: str) -> None:
    # The clock on each step: where a demo's (and a test's) minutes go, read off its output.
    print(f"==> {time.strftime('%H:%M:%S')} {message}", flush=True)


def stop_on_sigterm() -> None:
    """SIGTERM (systemd, timeout, kill) tears down like Ctrl-C, so nothing is left running."""
    def interrupt(signum: int, frame: object) -> None:
        raise KeyboardInterrupt

    signal.signal(signal.SIGTERM, interrupt)


def _answers(port: int) -> bool:
    return shutil.which("pg_isready") is not None and subprocess.run(
        ["pg_isready", "-q", "-h", "127.0.0.1", "-p", str(port)], check=False).returncode == 0


def fresh_database(name: str) -> tuple[str, procs.PrivatePostgres | None]:
    """DATABASE_URL when given; else database NAME made anew, so each run starts clean, on
    the PostgreSQL of 127.0.0.1:5432 or, when none answers, on a private one started here
    (returned, to be stopped with the rest). PostgreSQL is the platform's only database."""
    if os.environ.get("DATABASE_URL"):
        return os.environ["DATABASE_URL"], None
    server, port = None, 5432
    if not _answers(port):
        say("no PostgreSQL answers on 127.0.0.1:5432: starting a private one")
        server = procs.start_private_postgres()
        port = server.port
    pg = ["-h", "127.0.0.1", "-p", str(port), "-U", "postgres"]
    subprocess.run(["dropdb", *pg, "--if-exists", "--force", name], check=True)
    subprocess.run(["createdb", *pg, name], check=True)
    return f"postgres://postgres@127.0.0.1:{port}/{name}", server


class PlatformStack:
    def __init__(self, var: Path, database: str, state_file: Path | None = None) -> None:
        self.var = var
        self.database = database
        self.logs = var / "logs"
        self.started: list[procs.Proc] = []
        self.state_file = state_file
        self.env: dict[str, str] = {}
        self.api = ""
        self.redis_port = 0
        self.brokers: list[procs.PrivateRedis] = []
        self.postgres: procs.PrivatePostgres | None = None

    def keep(self, proc: procs.Proc) -> procs.Proc:
        self.started.append(proc)
        if self.state_file is not None:
            # What `benchctl lab down` kills after a crash.
            self.state_file.write_text(json.dumps({"pids": [p.popen.pid for p in self.started]}))
        return proc

    def manage(self, *args: str) -> str:
        done = subprocess.run([sys.executable, "manage.py", *args], cwd=REPO, env=self.env,
                              capture_output=True, text=True, check=False)
        if done.returncode != 0:
            raise SystemExit(f"manage.py {' '.join(args)} failed:\n{done.stderr}")
        return done.stdout

    def register_endpoint(self, region: str, name: str, host: str, iperf3_port: int,
                          echo_port: int, node_id: int | None,
                          key_file: Path | None = None) -> None:
        """Declare a reference endpoint (LabStack calls this for each it starts); with
        ``key_file``, its agent's new key is written there."""
        self.manage("reference_endpoint", region, name, host, f"--iperf3-port={iperf3_port}",
                    f"--echo-port={echo_port}",
                    *([f"--key-file={key_file}"] if key_file is not None else []),
                    *([f"--node={node_id}"] if node_id is not None else []))

    def enrol_loopback_node(self, provider: dict[str, Any], region: str, name: str,
                            start_worker: bool = True) -> tuple[int, Path, procs.Proc | None]:
        """A provider's token, `benchctl enroll` and `benchctl worker`, as on a host."""
        response = requests.post(
            f"{self.api}/api/v1/providers/{provider['id']}/enrolment-tokens",
            headers={"Authorization": f"Token {provider['token']}"},
            json={"region": region, "node_name": name}, timeout=10)
        response.raise_for_status()
        config = self.var / f"{name}.json"
        done = subprocess.run([sys.executable, "-m", "workers.cli", "--config", str(config),
                               "enroll", "--url", self.api, "--token", response.json()["token"],
                               "--address", "127.0.0.1", "--iperf3-port", str(procs.free_port())],
                              cwd=REPO, env=self.env, capture_output=True, text=True, check=False)
        if done.returncode != 0:
            raise RuntimeError(f"benchctl enroll {name} failed: {done.stderr.strip()}")
        worker = None
        if start_worker:
            worker = self.keep(procs.start_node_worker(config, self.logs, f"node-{name}"))
            procs.wait_worker_ready(worker, timeout=120)
        return int(json.loads(config.read_text())["node_id"]), config, worker

    def start(self, extra_env: dict[str, str] | None = None, brokers: int = 1,
              shared_cache: bool = False) -> None:
        """The platform; ``brokers`` > 1 adds Redis servers for the nodes (NODE_BROKERS);
        ``shared_cache``: the web workers' cache in its Redis (CACHE_URL, database 1), as a
        deployment with several web workers has it, not one per process."""
        database_url, self.postgres = fresh_database(self.database)
        self.env = {**os.environ, "DATABASE_URL": database_url,
                    "PYTHONUNBUFFERED": "1", "SWEEP_INTERVAL_SECONDS": "5",
                    "RUN_LEASE_SECONDS": "30", "NODE_VISIBILITY_TIMEOUT": "900",
                    "PYTHONPATH": str(REPO),
                    # Served as in production: a 404 or a crash shows the site's own page,
                    # never Django's debug page with its URL list and settings.
                    "DEBUG": "false",
                    # The lab's one buyer is also the bench's load generator (wrk).
                    "THROTTLE_RATES": "submission=1000000/minute,enrolment=100000/hour,"
                                      "enrolment-token=100000/hour",
                    "USER_MAX_QUEUED_RUNS_PER_NODE": "100000",
                    # No re-tests at random hours: they would land in the middle of what the
                    # demo and the benches measure (the demo runs its rounds on its own clock).
                    "RETEST_PER_DAY": "0", **(extra_env or {})}
        redis = procs.start_private_redis(self.var / "redis", secrets.token_hex(16))
        self.keep(redis.proc)
        self.redis_port = redis.port
        self.env |= {"REDIS_URL": redis.admin_url, "NODE_BROKER_ACL": "true"}
        if shared_cache:
            self.env["CACHE_URL"] = redis.admin_url.rsplit("/", 1)[0] + "/1"
        say(f"private Redis on port {redis.port}: password-protected, one ACL user per node")
        self.brokers = [redis]
        for i in range(1, brokers):
            more = procs.start_private_redis(self.var / f"redis-b{i}", secrets.token_hex(16))
            self.keep(more.proc)
            self.brokers.append(more)
        if brokers > 1:
            self.env["NODE_BROKERS"] = ",".join(
                f"{'default' if i == 0 else f'b{i}'}={b.admin_url}"
                for i, b in enumerate(self.brokers))
            say(f"{brokers} brokers for the nodes' queues (NODE_BROKERS), ports "
                f"{', '.join(str(b.port) for b in self.brokers)}")
        web_port = procs.free_port()
        self.api = f"http://127.0.0.1:{web_port}"
        self.env["PUBLIC_API_URL"] = self.api
        say("migrating the database")
        self.manage("migrate", "--noinput")
        self.keep(procs.start("web", gunicorn_argv("config.wsgi", web_port), self.logs, self.env))
        self.keep(procs.start("platform-worker", [
            sys.executable, "-m", "celery", "-A", "config.celery_app", "worker", "-B",
            "-Q", "platform", "-c", "1", "--loglevel", "INFO",
            "-s", str(self.var / "celerybeat-schedule")], self.logs, self.env))
        procs.wait_for(lambda: _up(f"{self.api}/api/v1/health"), 30, "the web server")
        say(f"platform up at {self.api}")

    def stop(self) -> None:
        procs.stop_all(list(reversed(self.started)), timeout=5)
        self.started.clear()
        if self.postgres is not None:
            self.postgres.remove()
            self.postgres = None


def gunicorn_argv(wsgi_module: str, port: int) -> list[str]:
    """How the platform's web server runs here (and make bench's baseline app, alike)."""
    return [sys.executable, "-m", "gunicorn", wsgi_module, "-b", f"127.0.0.1:{port}",
            # Requests mostly wait on PostgreSQL and Redis: more workers than cores pays.
            "-w", os.environ.get("WEB_CONCURRENCY", "4"), "--access-logfile", "-"]


def _up(url: str) -> bool:
    try:
        return requests.get(url, timeout=2).status_code == 200
    except requests.RequestException:
        return False
