"""`make demo`: the platform, enrolled node workers, a full benchmark, the leaderboard.

Every process is real and started here: a private Redis with per-node ACL users, gunicorn,
the platform worker (with the sweeper), reference endpoints (iperf3 -s and a TCP echo
server), and node workers enrolled through the real path (`benchctl enroll`). As root it
builds the lab (lab/specs/demo.yaml: four nodes on shaped links in namespaces);
otherwise two nodes on loopback. Ctrl-C stops everything.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import time
from pathlib import Path
from typing import Any

import requests

from lab import netlab, procs
from lab.platform_stack import PlatformStack, say, stop_on_sigterm
from lab.stack import LabStack

REPO = procs.REPO
VAR = REPO / "var" / "demo"
DEMO_SPEC = Path(__file__).resolve().parent / "specs" / "demo.yaml"
LOOPBACK_NODES = [("hangzhou", "hz-a100-01", "West Lake DC", "local_dc"),
                  ("shenzhen", "sz-h800-01", "Pearl River Cloud", "cloud")]
# A node's own figures; a multi-node job's links and cluster have tables of their own.
COLUMNS = [("RTT ms", "network.tcp_rtt", "{:.2f}"),
           ("TCP Gbit/s", "network.tcp_throughput", "{:.2f}"),
           ("4k IOPS", "storage.randread_iops", "{:,.0f}"),
           ("ckpt GB/s", "storage.checkpoint_write", "{:.2f}")]
CLUSTER_COLUMNS = [("busbw GB/s", "training.allreduce_busbw_largest", "{:.3f}"),
                   ("step ms", "training.step_time", "{:.1f}"),
                   ("comm %", "training.comm_share", "{:.0%}"),
                   ("samples/s", "training.samples_per_s", "{:.0f}")]

def lab_possible() -> str | None:
    """None when the lab can be built here, else why not."""
    if os.geteuid() != 0:
        return "not root"
    for tool in ("ip", "tc", "iperf3"):
        if shutil.which(tool) is None:
            return f"{tool} is missing"
    return None


class Demo:
    def __init__(self, loopback: bool) -> None:
        self.lab: LabStack | None = None
        self.loopback = loopback
        shutil.rmtree(VAR, ignore_errors=True)  # credentials of an earlier demo's nodes
        VAR.mkdir(parents=True, exist_ok=True)
        self.platform = PlatformStack(VAR, "benchdemo")
        self.logs = self.platform.logs
        self.manage = self.platform.manage
        self.keep = self.platform.keep

    def stop_all(self) -> None:
        if self.lab is not None:
            self.lab.down()
        self.platform.stop()
        say(f"stopped every process it started; logs are in {self.logs}")

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
        self.platform.start()
        return self.platform.api, self.platform.redis_port

    def start_lab(self, spec: netlab.LabSpec, api: str, redis_port: int,
                  seed: dict[str, Any]) -> list[int]:
        self.lab = LabStack(netlab.NetLab(spec), VAR / "lab", int(api.rsplit(":", 1)[1]), redis_port)
        say(f"building the lab: {len(spec.hosts)} hosts in network namespaces, shaped links")
        self.lab.up()
        self.lab.enrol_nodes(api, lambda name, kind: (seed["providers"][name]["id"],
                                                      seed["providers"][name]["token"]))

        self.lab.register_references(self.platform.register_endpoint)
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
            report_log = self.logs / f"reference-{region}-iperf3.json"
            self.keep(procs.start_iperf3_server(iperf3_port, self.logs, report_log=report_log))
            echo_log = self.logs / f"reference-{region}-echo.jsonl"
            self.keep(procs.start_echo_server(echo_port, self.logs, record_log=echo_log))
            self.platform.register_endpoint(region, "ref1", "127.0.0.1", iperf3_port, echo_port,
                                            None, str(report_log), str(echo_log))
            node_id, _, _ = self.platform.enrol_loopback_node(seed["providers"][provider], region, name)
            say(f"node worker {name} (node {node_id}) is consuming its own queue")
            node_ids.append(node_id)
        return node_ids

    def benchmark(self, api: str, token: str, node_ids: list[int]) -> dict[str, Any]:
        headers = {"Authorization": f"Token {token}"}
        response = requests.post(f"{api}/api/v1/benchmarks", headers=headers, timeout=10,
                                 # The quick profile as published, so the figures rank.
                                 json={"nodes": node_ids, "suite": "full", "profile": "quick"})
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
    waiting = f" {p['waiting']}" if p.get("waiting") else ""
    return f"[{p.get('probe')} {p.get('step')}/{p.get('steps')}{waiting}]"


def worst(samples: list[dict[str, Any]], metric: str) -> float | None:
    """With several reference peers, the node's worst figure."""
    values = [s["value"] for s in samples if s["metric"] == metric]
    if not values:
        return None
    return min(values) if "throughput" in metric or "iops" in metric else max(values)


def cell(value: float | None, fmt: str, width: int = 13) -> str:
    return f"{fmt.format(value) if value is not None else '-':>{width}}"


def print_comparison(job: dict[str, Any]) -> None:
    print("\nEach node alone (to its region's reference endpoint, its own storage):")
    print(f"{'node':<13}{'provider':<19}{'region':<20}" + "".join(f"{c[0]:>13}" for c in COLUMNS))
    for run in job["runs"]:
        node = run["node"]
        if run["status"] != "succeeded":
            print(f"{node['name']:<13}{run['status']}: {run['error'][:200]}")
            continue
        print(f"{node['name']:<13}{node['provider']:<19}{node['province'] + '/' + node['city']:<20}"
              + "".join(cell(worst(run["samples"], m), fmt) for _, m, fmt in COLUMNS))
    if job.get("links"):
        print("\nEach link (sender -> receiver; confirmed: the receiver's own iperf3 log agrees):")
        print(f"{'from':<13}{'to':<13}{'Gbit/s':>10}{'sender':>10}{'receiver':>10}{'RTT ms':>9}"
              "  confirmed")
        for li in job["links"]:
            print(f"{li['from_name']:<13}{li['to_name']:<13}{cell(li['throughput_gbps'], '{:.3f}', 10)}"
                  f"{cell(li['sender_gbps'], '{:.3f}', 10)}{cell(li['receiver_gbps'], '{:.3f}', 10)}"
                  f"{cell(li['rtt_ms'], '{:.2f}', 9)}  {'yes' if li['confirmed'] else 'no'}")
    cluster = job.get("cluster")
    if cluster:
        print(f"\nThe cluster as a whole: {cluster['name']}"
              + (f" ({cluster['note']})" if cluster["note"] else ""))
        print(f"{'slowest link':>13}" + "".join(f"{c[0]:>13}" for c in CLUSTER_COLUMNS))
        figures = cluster["figures"]
        print(cell(cluster["slowest_link_gbps"], "{:.3f}") + "".join(
            cell((figures.get(m) or {}).get("value"), fmt) for _, m, fmt in CLUSTER_COLUMNS))
        for finding in cluster["diagnosis"]:
            print(f"  {finding['verdict']}: {finding['advice']}")
    print()

def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--no-wait", action="store_true",
                        help="stop everything after printing the comparison")
    parser.add_argument("--loopback", action="store_true",
                        help="plain loopback nodes even as root (no lab)")
    args = parser.parse_args()
    demo = Demo(loopback=args.loopback)
    stop_on_sigterm()
    try:
        demo.run(wait=not args.no_wait)
    except KeyboardInterrupt:
        print()
    finally:
        demo.stop_all()


if __name__ == "__main__":
    main()
