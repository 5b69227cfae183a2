"""A lab wired to a running platform: reference endpoints, relays, enrolled node workers.

The platform (API, Redis) listens on loopback in the root namespace; each lab host reaches
it through a relay in its namespace that forwards 127.0.0.1:PORT to a unix socket, and a
root-namespace relay forwards that socket to the real port. No route leaves the lab.
With a spec's geography, each host's connections to other cities go through a detour relay
in its namespace (geography.py); the uplinks are on loopback and never detour.
"""

from __future__ import annotations

import json
import statistics
import sys
from collections.abc import Callable
from dataclasses import dataclass, field
from functools import partial
from pathlib import Path
from typing import Any

import requests

from benchmarks import runner
from lab import geography, procs
from lab.netlab import NetLab
from workers.host.iperf3_auth import ensure_keys, server_args

IPERF3_PORT = 5201
ECHO_PORT = 7007
RELAY_PORT_BASE = 17000

# register(region, name, host, iperf3_port, echo_port, node_id or None, key_file or None):
# with a key file, the platform writes the new key of the endpoint's agent there.
RegisterEndpoint = Callable[[str, str, str, int, int, "int | None", "Path | None"], None]


@dataclass
class LabNode:
    name: str
    node_id: int
    config_path: Path
    worker: procs.Proc


@dataclass
class LabStack:
    lab: NetLab
    work_dir: Path
    api_port: int
    redis_port: int
    started: list[procs.Proc] = field(default_factory=list)
    nodes: dict[str, LabNode] = field(default_factory=dict)

    def keep(self, proc: procs.Proc) -> procs.Proc:
        self.started.append(proc)
        return proc

    def relay(self, name: str, maps: list[str], host: str | None = None,
              delay_ms: float = 0, detours: list[str] | None = None,
              wait: bool = True) -> procs.Proc:
        # Raised priority: a relay that adds latency must wake on time on a busy machine.
        argv = ["nice", "-n", "-10", sys.executable, "-m", "lab.relay",
                *(a for m in maps for a in ("--map", m)), "--delay-ms", str(delay_ms),
                *(detours or [])]
        proc = self.keep(procs.start(name, self.lab.exec_argv(host, argv) if host else argv,
                                     self.work_dir, env={"PYTHONPATH": str(procs.REPO)}))
        if wait:
            relay_ready(proc)
        return proc

    def start_geography(self) -> None:
        """Each host's detour relay, then the nft rules that send it the host's connections
        to other cities (rules before the relay would refuse them). The relays start at
        once and are waited for together: each calibrates for a second or so."""
        geo = self.lab.spec.geography
        if geo is None:
            return
        plan = geo.detours({h.name: (h.region, self.lab.address(h.name))
                            for h in self.lab.spec.hosts})
        started = [(host, detours, self.relay(f"geography-{host}", [], host=host,
                                              detours=geography.relay_args(detours), wait=False))
                   for host, detours in plan.items()]
        for host, detours, proc in started:
            relay_ready(proc)
            self.lab.nft(host, geography.nft_ruleset(detours))

    def up(self) -> None:
        self.lab.up()
        sockets = self.work_dir / "sockets"
        sockets.mkdir(parents=True, exist_ok=True)
        api_sock, redis_sock = sockets / "api.sock", sockets / "redis.sock"
        for path in (api_sock, redis_sock):
            path.unlink(missing_ok=True)
        self.relay("root-uplink", [f"unix:{api_sock}=127.0.0.1:{self.api_port}",
                                   f"unix:{redis_sock}=127.0.0.1:{self.redis_port}"])
        for host in self.lab.spec.nodes():
            self.relay(f"uplink-{host.name}", [f"127.0.0.1:{self.api_port}=unix:{api_sock}",
                                               f"127.0.0.1:{self.redis_port}=unix:{redis_sock}"],
                       host=host.name)
        # A reference's agent posts records, a buyer's site calls the API: no broker.
        for host in [*self.lab.spec.references(), *self.lab.spec.sites()]:
            self.relay(f"uplink-{host.name}", [f"127.0.0.1:{self.api_port}=unix:{api_sock}"],
                       host=host.name)
        self.start_geography()
        for ref in self.lab.spec.references():
            self.start_reference(ref.name)

    def start_reference(self, name: str) -> None:
        addr = self.lab.address(name)
        # Only the run holding the turn gets in: the agent keeps the users file at the
        # platform's turns (its key pair made here first, so the server starts with it).
        auth = server_args(ensure_keys(self.iperf3_auth(name)))
        # -J --logfile: the reference's own report of every test, its agent hands them in.
        # (restarted when it exits: with -J, iperf3 3.12's server exits after a failed test)
        self.keep(procs.start(f"iperf3-{name}", self.lab.exec_argv(name, procs.restart_loop([
            "iperf3", "-s", "-B", addr, "-p", str(IPERF3_PORT), *auth, "-J", "--logfile",
            str(self.report_log(name))])), self.work_dir))
        # Raised priority, as a reference endpoint is a machine of its own: the round trips
        # it times are its evidence, and on a busy lab host a late wake-up would make the
        # host's honest RTT look shorter than the reference's.
        self.keep(procs.start(f"echo-{name}", self.lab.exec_argv(
            name, ["nice", "-n", "-10", sys.executable, "-m", "workers.cli", "echo-server",
                   "--bind", addr, "--port", str(ECHO_PORT), "--log", str(self.echo_log(name))]),
            self.work_dir, env={"PYTHONPATH": str(procs.REPO)}))

    def iperf3_auth(self, reference: str) -> Path:
        return self.work_dir / f"iperf3-auth-{reference}"

    def report_log(self, reference: str) -> Path:
        return self.work_dir / f"iperf3-{reference}.json"

    def echo_log(self, reference: str) -> Path:
        return self.work_dir / f"echo-{reference}.jsonl"

    def register_references(self, register: RegisterEndpoint) -> None:
        """Each region's reference, with its agent in its own namespace handing its records
        in, and per node with added latency its own relayed path (on the same servers)."""
        for ref in self.lab.spec.references():
            addr = self.lab.address(ref.name)
            key_file = self.work_dir / f"{ref.name}.key"
            register(ref.region, ref.name, addr, IPERF3_PORT, ECHO_PORT, None, key_file)
            agent = self.keep(procs.start(f"reference-agent-{ref.name}", self.lab.exec_argv(
                ref.name, procs.reference_agent_argv(
                    f"http://127.0.0.1:{self.api_port}", key_file, self.report_log(ref.name),
                    self.echo_log(ref.name), self.iperf3_auth(ref.name))), self.work_dir,
                env={"PYTHONPATH": str(procs.REPO), "LANGUAGE": "en"}))
            # Its server lets in no one until the platform has its public key: a turn
            # granted before would come without a credential.
            procs.wait_for(partial(_authenticating, agent), 60, f"the agent of {ref.name}")
            if not agent.alive():
                raise RuntimeError(f"the agent of {ref.name} stopped:\n{agent.log()[-2000:]}")
            for node in self.lab.spec.nodes():
                if node.region != ref.region or not node.delay_ms or node.name not in self.nodes:
                    continue
                port = self.relay_port(node.name)
                self.relay(f"delay-{node.name}", [f"{addr}:{port}={addr}:{ECHO_PORT}"],
                           host=ref.name, delay_ms=node.delay_ms)
                register(ref.region, f"{ref.name}-{node.name}", addr, IPERF3_PORT, port,
                         self.nodes[node.name].node_id, None)

    def enrol_nodes(self, api_url: str, provider_token: Callable[[str, str], tuple[int, str]]) -> None:
        """Enrol every node host through the real path, from inside its namespace.

        The hosts enrol at once and their workers start at once, as a provider's fleet
        would: one after the other was a quarter of a lab test's setup (a worker takes
        seconds to import its probes on two cores)."""
        enrolling = []
        for host in self.lab.spec.nodes():
            if not host.enrol:
                continue
            provider_id, token = provider_token(host.provider, host.provider_kind)
            response = requests.post(
                f"{api_url}/api/v1/providers/{provider_id}/enrolment-tokens",
                headers={"Authorization": f"Token {token}"}, timeout=10,
                json={"region": host.region, "node_name": host.name})
            response.raise_for_status()
            config = self.work_dir / f"{host.name}.json"
            enrolling.append((host, config, procs.start(f"enrol-{host.name}", self.lab.exec_argv(
                host.name, [sys.executable, "-m", "workers.cli", "--config", str(config),
                            "enroll", "--url", api_url, "--token", response.json()["token"],
                            "--address", self.lab.address(host.name),
                            "--iperf3-port", str(IPERF3_PORT)]),
                self.work_dir, env={"PYTHONPATH": str(procs.REPO)})))
        starting = []
        for host, config, enrol in enrolling:
            if enrol.popen.wait(60) != 0:
                raise RuntimeError(f"enrolling {host.name} failed:\n{enrol.log()}")
            starting.append((host, config, self.keep(procs.start(
                f"worker-{host.name}", self.lab.exec_argv(host.name, procs.node_worker_argv(config)),
                self.work_dir, env=procs.NODE_WORKER_ENV))))
        for host, config, worker in starting:
            procs.wait_worker_ready(worker, timeout=120)
            node_id = int(json.loads(config.read_text())["node_id"])
            self.nodes[host.name] = LabNode(host.name, node_id, config, worker)

    def relay_port(self, node: str) -> int:
        """The reference's port of a node's delay relay (register_references)."""
        names = [n.name for n in self.lab.spec.nodes()]
        return RELAY_PORT_BASE + names.index(node)

    def base_rtt(self, node: str, reference: str, count: int = 20, relayed: bool = False) -> float:
        """The TCP RTT (ms, median) from a node's namespace to its reference's echo server
        without the delay relay, timed by the reference as a run's is: the path's own round
        trip (the veth hops and both ends' processing) that a relay's delay adds to.
        ``relayed``: through the node's delay relay, the path a run's figure is taken on.

        A shaped path's figure is this plus the added delay; comparing it with the delay
        alone counted the ends' processing (0.2-0.8 ms on two busy cores) as an error."""
        port = self.relay_port(node) if relayed else ECHO_PORT
        done = runner.run(self.lab.exec_argv(node, procs.answer_echo_argv(
            self.lab.address(reference), port, count, "lab-base-rtt", raised=False)),
            timeout=60)
        if done.returncode != 0:
            raise RuntimeError(f"the base RTT from {node} to {reference}: {done.stderr.strip()}")
        return float(statistics.median(json.loads(done.stdout.strip().splitlines()[-1])))

    def tcp_rtt(self, host: str, address: str, port: int, raw: bool = False,
                fastest: bool = False, count: int = 20, greeting: str = "") -> float:
        """The TCP RTT (ms, median of one-byte echoes, or the fastest) from ``host``'s
        namespace to an echo server; ``raw``: past the geography's relays, the path that a
        city pair's round trip is added to (lab/rtt.py)."""
        done = runner.run(self.lab.exec_argv(host, [
            "env", f"PYTHONPATH={procs.REPO}", sys.executable, "-m", "lab.rtt", address,
            str(port), "--count", str(count), *(["--raw"] if raw else []),
            *(["--fastest"] if fastest else []),
            *(["--greeting", greeting] if greeting else [])]), timeout=60)
        if done.returncode != 0:
            raise RuntimeError(f"the TCP RTT from {host} to {address}:{port}: "
                               f"{done.stderr.strip()}")
        return float(done.stdout.strip().splitlines()[-1])

    def down(self) -> None:
        # The node workers first, together, while their uplinks still carry their goodbyes;
        # then every server and relay at once.
        workers = [n.worker for n in self.nodes.values()]
        procs.stop_all([p for p in self.started if p in workers], timeout=5)
        procs.stop_all([p for p in reversed(self.started) if p not in workers], timeout=5)
        self.started.clear()
        self.lab.down()


def relay_ready(proc: procs.Proc) -> None:
    def ready() -> bool:
        if not proc.alive():
            raise RuntimeError(f"relay {proc.name} exited:\n{proc.log()[-2000:]}")
        return "relay ready" in proc.log()

    procs.wait_for(ready, 15, f"relay {proc.name}")


def _authenticating(agent: procs.Proc) -> bool:
    """The agent has handed the platform its iperf3 public key (or stopped)."""
    return "lets in the turns' holders" in agent.log() or not agent.alive()


def describe(stack: LabStack) -> list[dict[str, Any]]:
    """A row per host; with a geography, its city and the round trip the lab adds to its
    TCP connections to each other city (ICMP keeps the raw one)."""
    geo = stack.lab.spec.geography
    rows = []
    for h in stack.lab.spec.hosts:
        row: dict[str, Any] = {
            "host": h.name, "kind": h.kind, "region": h.region,
            "address": stack.lab.address(h.name), "rate_mbit": h.rate_mbit,
            "delay_ms": h.delay_ms,
            "node_id": stack.nodes[h.name].node_id if h.name in stack.nodes else None}
        if geo is not None:
            city = geo.city_of(h.region)
            row |= {"city": city, "tcp_rtt_ms_to": {c: geo.rtt_ms(city, c)
                                                    for c in sorted(geo.cities) if c != city}}
        rows.append(row)
    return rows
