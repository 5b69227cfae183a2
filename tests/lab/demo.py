"""`make demo`: the platform, enrolled node workers, a full benchmark, the leaderboard.

Every process is real and started here: a private Redis with per-node ACL users, gunicorn,
the platform worker (with the sweeper), reference endpoints (iperf3 -s and a TCP echo
server), and node workers enrolled through the real path (`benchctl enroll`). As root it
builds the lab (tests/lab/specs/demo.yaml: four nodes on shaped links in namespaces);
otherwise two nodes on loopback. Ctrl-C stops everything.
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

from tests.lab import netlab, procs
from tests.lab.stack import LabStack

REPO = procs.REPO
VAR = REPO / "var" / "demo"
DEMO_SPEC = REPO / "tests" / "lab" / "specs" / "demo.yaml"
# The quick profile, one DDP rank per node: the demo's nodes share two cores.
PARAMS = {"training_ranks": 1}
LOOPBACK_NODES = [("hangzhou", "hz-a100-01", "West Lake DC", "local_dc"),
                  ("shenzhen", "sz-h800-01", "Pearl River Cloud", "cloud")]
COLUMNS = [("RTT ms", "network.tcp_rtt", "{:.2f}"),
           ("TCP Gbit/s", "network.tcp_throughput", "{:.2f}"),
           ("node-node Gbit/s", "network.internode_throughput", "{:.2f}"),
           ("4k IOPS", "storage.randread_iops", "{:,.0f}"),
           ("ckpt GB/s", "storage.checkpoint_write", "{:.2f}"),
           ("busbw GB/s", "training.allreduce_busbw", "{:.3f}"),
           ("comm %", "training.comm_share", "{:.0%}")]


def say(message: str) -> None:
    print(f"==> {message}", flush=True)


def lab_possible() -> str | None:
    """None when the lab can be built here, else why not."""
    if os.geteuid() != 0:
        return "not root"
    for tool in ("ip", "tc", "iperf3"):
        if shutil.which(tool) is None:
            return f"{tool} is missing"
    return None


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
    def __init__(self, loopback: bool) -> None:
        self.started: list[procs.Proc] = []
        self.lab: LabStack | None = None
        self.loopback = loopback
        shutil.rmtree(VAR, ignore_errors=True)  # credentials of an earlier demo's nodes
        VAR.mkdir(parents=True, exist_ok=True)
        self.logs = VAR / "logs"
        self.env: dict[str, str] = {}

    def keep(self, proc: procs.Proc) -> procs.Proc:
        self.started.append(proc)
        return proc

    def stop_all(self) -> None:
        if self.lab is not None:
            self.lab.down()
        for proc in reversed(self.started):
            proc.stop(timeout=5)
        say(f"stopped every process it started; logs are in {self.logs}")

    def manage(self, *args: str) -> str:
        done = subprocess.run([sys.executable, "manage.py", *args], cwd=REPO, env=self.env,
                              capture_output=True, text=True, check=False)
        if done.returncode != 0:
            raise SystemExit(f"manage.py {' '.join(args)} failed:\n{done.stderr}")
        return done.stdout

    def run(self, wait: bool) -> None:
        why_not = lab_possible()
        use_lab = why_not is None and not self.loopback
        if not use_lab:
            say(f"plain loopback nodes ({'asked for' if self.loopback else why_not}: the lab "
                "of namespaces and shaped links needs root)")
        api, redis_port = self.start_platform()
        if use_lab:
            spec = netlab.load_spec(DEMO_SPEC)
            providers = {h.provider: h.provider_kind for h in spec.nodes()}
        else:
            spec = None
            providers = {p: k for _, _, p, k in LOOPBACK_NODES}
        seed = json.loads(self.manage("seed_demo", *[f"--provider={n}={k}" for n, k in providers.items()]))
        if spec is not None:
            node_ids = self.start_lab(spec, api, redis_port, seed)
        else:
            node_ids = self.start_loopback_nodes(api, seed)
        job = self.benchmark(api, seed["buyer_token"], node_ids)
        print_comparison(job)
        say(f"leaderboard: {api}/   API: {api}/api/v1/leaderboard?metric=network.tcp_throughput")
        say(f"buyer token for curl: {seed['buyer_token']}")
        if wait:
            say("press Ctrl-C to stop everything")
            while True:
                time.sleep(3600)

    def start_platform(self) -> tuple[str, int]:
        self.env = {**os.environ, "DATABASE_URL": fresh_database_url(), "PYTHONUNBUFFERED": "1",
                    "SWEEP_INTERVAL_SECONDS": "5", "RUN_LEASE_SECONDS": "30",
                    "NODE_VISIBILITY_TIMEOUT": "900", "PYTHONPATH": str(REPO)}
        redis = procs.start_private_redis(VAR / "redis", secrets.token_hex(16))
        self.keep(redis.proc)
        self.env |= {"REDIS_URL": redis.admin_url, "NODE_BROKER_ACL": "true"}
        say(f"private Redis on port {redis.port}: password-protected, one ACL user per node")
        web_port = procs.free_port()
        api = f"http://127.0.0.1:{web_port}"
        self.env["PUBLIC_API_URL"] = api
        say("migrating the database")
        self.manage("migrate", "--noinput")
        self.keep(procs.start("web", [
            sys.executable, "-m", "gunicorn", "config.wsgi", "-b", f"127.0.0.1:{web_port}",
            "-w", "2", "--access-logfile", "-"], self.logs, self.env))
        self.keep(procs.start("platform-worker", [
            sys.executable, "-m", "celery", "-A", "config.celery_app", "worker", "-B",
            "-Q", "platform", "-c", "1", "--loglevel", "INFO",
            "-s", str(VAR / "celerybeat-schedule")], self.logs, self.env))
        procs.wait_for(lambda: _up(f"{api}/api/v1/health"), 30, "the web server")
        say(f"platform up at {api}")
        return api, redis.port

    def start_lab(self, spec: netlab.LabSpec, api: str, redis_port: int,
                  seed: dict[str, Any]) -> list[int]:
        self.lab = LabStack(netlab.NetLab(spec), VAR / "lab", int(api.rsplit(":", 1)[1]), redis_port)
        say(f"building the lab: {len(spec.hosts)} hosts in network namespaces, shaped links")
        self.lab.up()
        self.lab.enrol_nodes(api, lambda name, kind: (seed["providers"][name]["id"],
                                                      seed["providers"][name]["token"]))

        def register(region: str, name: str, host: str, iperf3_port: int, echo_port: int,
                     node_id: int | None) -> None:
            self.manage("reference_endpoint", region, name, host, f"--iperf3-port={iperf3_port}",
                        f"--echo-port={echo_port}",
                        *([f"--node={node_id}"] if node_id is not None else []))

        self.lab.register_references(register)
        for host in spec.hosts:
            rate = f"{host.rate_mbit:g} Mbit/s" if host.rate_mbit else "unshaped"
            delay = f", +{host.delay_ms:g} ms TCP RTT" if host.delay_ms else ""
            say(f"  {host.kind:<9} {host.name:<13} {self.lab.lab.address(host.name):<12} "
                f"{host.region:<9} {rate}{delay}")
        return [n.node_id for n in self.lab.nodes.values()]

    def start_loopback_nodes(self, api: str, seed: dict[str, Any]) -> list[int]:
        node_ids = []
        for region, name, provider, _ in LOOPBACK_NODES:
            iperf3_port, echo_port = procs.free_port(), procs.free_port()
            self.keep(procs.start_iperf3_server(iperf3_port, self.logs))
            self.keep(procs.start_echo_server(echo_port, self.logs))
            self.manage("reference_endpoint", region, "ref1", "127.0.0.1",
                        f"--iperf3-port={iperf3_port}", f"--echo-port={echo_port}")
            node_ids.append(self.enrol(api, seed["providers"][provider], region, name))
        return node_ids

    def enrol(self, api: str, provider: dict[str, Any], region: str, name: str) -> int:
        """The provider's token, then `benchctl enroll` and `benchctl worker`, as on a host."""
        headers = {"Authorization": f"Token {provider['token']}"}
        config = VAR / f"{name}.json"
        response = requests.post(
            f"{api}/api/v1/providers/{provider['id']}/enrolment-tokens", headers=headers,
            json={"region": region, "node_name": name}, timeout=10)
        response.raise_for_status()
        subprocess.run([sys.executable, "-m", "workers.cli", "--config", str(config), "enroll",
                        "--url", api, "--token", response.json()["token"], "--address", "127.0.0.1",
                        "--iperf3-port", str(procs.free_port())],
                       cwd=REPO, env=self.env, check=True)
        worker = self.keep(procs.start_node_worker(config, self.logs, f"node-{name}"))
        procs.wait_worker_ready(worker)
        node_id = int(json.loads(config.read_text())["node_id"])
        say(f"node worker {name} (node {node_id}) is consuming its own queue")
        return node_id

    def benchmark(self, api: str, token: str, node_ids: list[int]) -> dict[str, Any]:
        headers = {"Authorization": f"Token {token}"}
        response = requests.post(f"{api}/api/v1/benchmarks", headers=headers, timeout=10,
                                 json={"nodes": node_ids, "suite": "full", "profile": "quick",
                                       "params": PARAMS})
        response.raise_for_status()
        url = response.json()["url"]
        say(f"submitted the full suite (quick profile) on {len(node_ids)} nodes: {url}")
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


def worst(samples: list[dict[str, Any]], metric: str) -> float | None:
    """With several peers (node-to-node), the node's worst link."""
    values = [s["value"] for s in samples if s["metric"] == metric]
    if not values:
        return None
    return min(values) if "throughput" in metric or "iops" in metric else max(values)


def print_comparison(job: dict[str, Any]) -> None:
    print()
    header = f"{'node':<13}{'provider':<19}{'region':<20}" + "".join(f"{c[0]:>17}" for c in COLUMNS)
    print(header)
    for run in job["runs"]:
        node = run["node"]
        if run["status"] != "succeeded":
            print(f"{node['name']:<13}{run['status']}: {run['error'][:200]}")
            continue
        cells = []
        for _, metric, fmt in COLUMNS:
            value = worst(run["samples"], metric)
            cells.append(f"{fmt.format(value) if value is not None else '-':>17}")
        print(f"{node['name']:<13}{node['provider']:<19}{node['province'] + '/' + node['city']:<20}"
              + "".join(cells))
    print()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--no-wait", action="store_true",
                        help="stop everything after printing the comparison")
    parser.add_argument("--loopback", action="store_true",
                        help="plain loopback nodes even as root (no lab)")
    args = parser.parse_args()
    demo = Demo(loopback=args.loopback)
    try:
        demo.run(wait=not args.no_wait)
    except KeyboardInterrupt:
        print()
    finally:
        demo.stop_all()


if __name__ == "__main__":
    main()
