"""The lab: several "hosts" on one machine, as network namespaces on a shaped bridge.

Each host is a namespace ``bl-<lab>-<host>`` joined to a bridge namespace by a veth pair
whose two ends are shaped with ``tc ... tbf rate`` (the host's egress is its upload, the
bridge side's egress its download). Addresses exist only inside these namespaces. Nothing
here routes to the root namespace: processes inside reach the platform through unix
sockets (see relay.py). A spec's ``geography`` (geography.py) adds the round trip between
cities to TCP connections between hosts of different cities. Everything is named with the
``bl-`` prefix, so ``down`` (or ``cleanup``) finds and removes it, also after a crash.
"""

from __future__ import annotations

import json
import subprocess
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

from lab.geography import Geography, GeographyError

PREFIX = "bl-"


class LabError(Exception):
    pass


@dataclass(frozen=True)
class HostSpec:
    name: str
    # "node", "reference", or "site": a buyer's own machine (neither enrolled nor a
    # reference) with an uplink to the platform's API, to measure nodes from.
    kind: str = "node"
    region: str = "hangzhou"
    provider: str = ""
    provider_kind: str = "cloud"
    rate_mbit: float | None = None  # tbf rate of the host's link, both directions
    delay_ms: float = 0.0  # added to TCP round trips to its region's reference (relay)
    enrol: bool = True  # False: a bare host, for a person to enrol as a provider would
    price_cny_month: int | None = None  # the node's monthly price, set by its provider (demo)
    # The GPU model the host stands for (it has none): its processes' inventory names it as
    # declared (workers.host.inventory.LAB_GPU), and the platform estimates on its datasheet.
    gpu: str = ""


@dataclass(frozen=True)
class LabSpec:
    name: str
    hosts: list[HostSpec] = field(default_factory=list)
    subnet: str = "10.213.0"
    geography: Geography | None = None  # None: no delay between cities

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> LabSpec:
        hosts = [HostSpec(**h) for h in data.get("hosts", [])]
        try:
            geography = Geography.from_dict(data["geography"]) if data.get("geography") else None
        except GeographyError as exc:
            raise LabError(str(exc)) from exc
        spec = cls(name=str(data["name"]), hosts=hosts, subnet=str(data.get("subnet", "10.213.0")),
                   geography=geography)
        spec.validate()
        return spec

    def validate(self) -> None:
        if not self.name.isalnum() or len(self.name) > 6:
            raise LabError(f"lab name {self.name!r}: 1-6 letters or digits (it names links)")
        names = [h.name for h in self.hosts]
        if len(set(names)) != len(names):
            raise LabError("host names must be unique")
        if len(self.hosts) > 200:
            raise LabError("at most 200 hosts")
        for h in self.hosts:
            if h.kind not in ("node", "reference", "site"):
                raise LabError(f"host {h.name}: kind must be node, reference or site")
            price = h.price_cny_month
            if price is not None and (type(price) is not int or price < 0):
                raise LabError(f"host {h.name}: price_cny_month must be a whole number of CNY")
            if self.geography is not None:
                try:
                    self.geography.city_of(h.region)
                except GeographyError as exc:
                    raise LabError(f"host {h.name}: {exc}") from exc

    def nodes(self) -> list[HostSpec]:
        return [h for h in self.hosts if h.kind == "node"]

    def references(self) -> list[HostSpec]:
        return [h for h in self.hosts if h.kind == "reference"]

    def sites(self) -> list[HostSpec]:
        return [h for h in self.hosts if h.kind == "site"]


def load_spec(path: Path) -> LabSpec:
    text = path.read_text()
    data = json.loads(text) if path.suffix == ".json" else yaml.safe_load(text)
    return LabSpec.from_dict(data)


def sh(*argv: str, check: bool = True, stdin: str | None = None) -> str:
    done = subprocess.run(list(argv), capture_output=True, text=True, check=False, input=stdin)
    if check and done.returncode != 0:
        raise LabError(f"{' '.join(argv)}: {done.stderr.strip() or done.stdout.strip()}")
    return done.stdout


def tbf(rate_mbit: float) -> list[str]:
    """tbf arguments for a rate: a burst of 10 ms of traffic (at least 32 KiB) and a 20 ms
    queue. The bucket must outlast the sender's scheduling delays: tokens that arrive while
    it is full are lost, and with 2 ms a busy two-core machine (the platform, the workers and
    the iperf3 pairs on it) lost up to a fifth of a 200 Mbit/s link (0.156 Gbit/s measured,
    on main too). The long-run rate is the tbf rate whatever the bucket; a 2-second test
    gains at most the one bucket (0.5% at 200 Mbit/s)."""
    burst = max(32 * 1024, int(rate_mbit * 1e6 / 8 * 0.010))
    return ["tbf", "rate", f"{rate_mbit:g}mbit", "burst", str(burst), "latency", "20ms"]


class NetLab:
    def __init__(self, spec: LabSpec) -> None:
        self.spec = spec

    @property
    def bridge_ns(self) -> str:
        return f"{PREFIX}{self.spec.name}-br"

    def ns(self, host: str) -> str:
        return f"{PREFIX}{self.spec.name}-{host}"

    def address(self, host: str) -> str:
        index = [h.name for h in self.spec.hosts].index(host)
        return f"{self.spec.subnet}.{index + 1}"

    def host(self, name: str) -> HostSpec:
        return next(h for h in self.spec.hosts if h.name == name)

    def exec_argv(self, host: str, argv: Sequence[str]) -> list[str]:
        gpu = next((h.gpu for h in self.spec.hosts if h.name == host), "")
        declared = ["env", f"BENCH_LAB_GPU={gpu}"] if gpu else []
        return ["ip", "netns", "exec", self.ns(host), *declared, *argv]

    def up(self) -> None:
        self.down()
        sh("ip", "netns", "add", self.bridge_ns)
        sh("ip", "-n", self.bridge_ns, "link", "add", "br0", "type", "bridge")
        sh("ip", "-n", self.bridge_ns, "link", "set", "br0", "up")
        sh("ip", "-n", self.bridge_ns, "link", "set", "lo", "up")
        for i, host in enumerate(self.spec.hosts):
            self._add_host(i, host)

    def veth_names(self, i: int) -> tuple[str, str]:
        # Short names (15 characters at most), prefixed, unique per lab, briefly in the root
        # namespace: moved out at once, and destroyed with their namespaces.
        return f"bl{self.spec.name}{i}h", f"bl{self.spec.name}{i}b"

    def shape(self, host: str, rate_mbit: float) -> None:
        """Set a host's link rate, both directions, on the running lab (tc qdisc replace)."""
        i = [h.name for h in self.spec.hosts].index(host)
        sh("ip", "netns", "exec", self.ns(host), "tc", "qdisc", "replace", "dev", "eth0", "root",
           *tbf(rate_mbit))
        sh("ip", "netns", "exec", self.bridge_ns, "tc", "qdisc", "replace", "dev",
           self.veth_names(i)[1], "root", *tbf(rate_mbit))

    def nft(self, host: str, ruleset: str) -> None:
        """Load nft rules into a host's namespace (they go with it on ``down``)."""
        sh("ip", "netns", "exec", self.ns(host), "nft", "-f", "-", stdin=ruleset)

    def _add_host(self, i: int, host: HostSpec) -> None:
        ns = self.ns(host.name)
        here, there = self.veth_names(i)
        sh("ip", "netns", "add", ns)
        sh("ip", "link", "add", here, "type", "veth", "peer", "name", there)
        sh("ip", "link", "set", here, "netns", ns)
        sh("ip", "link", "set", there, "netns", self.bridge_ns)
        sh("ip", "-n", ns, "link", "set", here, "name", "eth0")
        sh("ip", "-n", ns, "addr", "add", f"{self.address(host.name)}/24", "dev", "eth0")
        sh("ip", "-n", ns, "link", "set", "eth0", "up")
        sh("ip", "-n", ns, "link", "set", "lo", "up")
        sh("ip", "-n", self.bridge_ns, "link", "set", there, "master", "br0")
        sh("ip", "-n", self.bridge_ns, "link", "set", there, "up")
        if host.rate_mbit:
            sh("ip", "netns", "exec", ns, "tc", "qdisc", "add", "dev", "eth0", "root",
               *tbf(host.rate_mbit))
            sh("ip", "netns", "exec", self.bridge_ns, "tc", "qdisc", "add", "dev", there, "root",
               *tbf(host.rate_mbit))

    def down(self) -> None:
        cleanup(f"{PREFIX}{self.spec.name}-", f"bl{self.spec.name}")


def namespaces() -> list[str]:
    return [line.split()[0] for line in sh("ip", "netns", "list").splitlines() if line.strip()]


def root_links() -> list[str]:
    names = []
    for line in sh("ip", "-o", "link", "show").splitlines():
        parts = line.split(":", 2)
        if len(parts) > 1:
            names.append(parts[1].strip().split("@", 1)[0])
    return names


def cleanup(ns_prefix: str = PREFIX, link_prefix: str = "bl") -> list[str]:
    """Remove every lab namespace and stray lab link; returns what was removed."""
    removed = []
    for ns in namespaces():
        if ns.startswith(ns_prefix):
            # Processes still inside would keep the namespace's network alive: kill them.
            pids = sh("ip", "netns", "pids", ns, check=False).split()
            if pids:
                subprocess.run(["kill", "-9", *pids], capture_output=True, check=False)
            sh("ip", "netns", "delete", ns, check=False)
            removed.append(ns)
    for link in root_links():
        if link.startswith(link_prefix) and link != "lo":
            sh("ip", "link", "delete", link, check=False)
            removed.append(link)
    return removed
