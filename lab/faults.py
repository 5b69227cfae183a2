"""Faults the lab injects into its running hosts, each with its ground truth (#36).

A fault is a kind, the part it touches (one node, or a link's two ends) and an amount; the
truth a diagnosis is judged against is that part and the kind of finding it should read
(slow, lossy, latent). What each does, with what this kernel has (no netem here):

* ``slow-nic``: the node's link shaped to ``amount`` of its rate (tc tbf, both directions),
  as a NIC negotiated down or a congested switch port.
* ``slow-link``: the pair's traffic policed to ``amount`` of their rate in both directions
  (nft ``limit rate over ... drop`` at each end on what arrives from the other), their other
  links untouched: a bad path between two nodes.
* ``lossy-node`` / ``lossy-link``: ``amount`` of the packets dropped at random (nft
  ``numgen random``) on the node's own link both ways, or only between the pair, each where
  it arrives.
* ``latent-node``: ``amount`` ms added to every TCP round trip to and from the node: its
  connections, and every other host's connections to it, detour through a relay that holds
  them (lab/relay.py ``--detour``, the geography's mechanism); ICMP keeps the raw path.
* ``slow-disk``: the node's disk capped at ``amount`` of the IOPS fio reaches here: its node
  worker, and so every probe it starts (fio's jobs included), in a blkio cgroup of its own
  (``bench-lab-<lab>-<host>``, lab/blkio.py) throttled to that many reads and writes a second
  on the disk its probes write to, while the other hosts keep the real disk. The part a
  diagnosis should name is ``disk:<host>`` (board/disk_faults.py), kind slow. It needs
  cgroup v1's blkio throttling; ``inject`` says what is missing where there is none.
* ``healthy``: nothing injected: the diagnosis should name no part.

A noisy neighbour is not here yet: every lab host shares the machine's two cores, and a
load beside one node's probes is a load beside all of them (the scheduler spreads it), so
what it should cost one node would cost its peers too. It needs each host's CPU of its own
first (a cpuset per lab host, which the two cores here cannot give three or four hosts),
and the steal and iowait the probes record as the figures a rule would read.
"""

from __future__ import annotations

import random
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from benchmarks.probes.storage import data_root
from lab import blkio
from lab.netlab import PREFIX, sh
from lab.relay import BYPASS_MARK
from lab.stack import LabStack, relay_ready

# (kind, the finding's kind, how much: a share of the rate, of packets, of IOPS, or ms)
KINDS: dict[str, tuple[str, float]] = {
    "slow-nic": ("slow", 0.3),
    "slow-link": ("slow", 0.3),
    "lossy-node": ("lossy", 0.01),
    "lossy-link": ("lossy", 0.01),
    "latent-node": ("latent", 5.0),
    "slow-disk": ("slow", 0.04),
    "healthy": ("", 0.0),
}
NODE_KINDS = frozenset({"slow-nic", "lossy-node", "latent-node", "slow-disk"})
DISK_KINDS = frozenset({"slow-disk"})  # their part is the node's disk, not the node
# What fio's 4k random reads reach on this machine's disk with the storage probe's settings
# (32 jobs, psync, O_DIRECT; 2 s runs of 64 MiB, the fault bench's): 51,000-57,000 IOPS
# alone; in the lab's storage jobs 11,000-35,000 per host beside two or three others (the
# two cores bound it). A slow-disk of 0.04 caps the host at 2,000 IOPS (measured through
# the throttle: 1,955-2,002), under a fifth of the least a healthy lab host read.
DISK_IOPS = 50_000
FILTER_TABLE = "bl_fault"
NAT_TABLE = "bl_fault_latency"
LATENCY_PORT = 17390  # the latent-node relays' detour port, in each host's namespace


@dataclass(frozen=True)
class Fault:
    kind: str
    hosts: tuple[str, ...]  # the node, or the link's two ends; () when healthy
    amount: float

    @property
    def part(self) -> str:
        """The part a diagnosis should name: node:NAME or link:A-B (ends sorted)."""
        if not self.hosts:
            return ""
        if self.kind in DISK_KINDS:
            return f"disk:{self.hosts[0]}"
        return (f"node:{self.hosts[0]}" if len(self.hosts) == 1
                else f"link:{'-'.join(sorted(self.hosts))}")

    @property
    def finding_kind(self) -> str:
        return KINDS[self.kind][0]

    def describe(self) -> str:
        if not self.hosts:
            return "healthy"
        if self.kind in DISK_KINDS:
            return (f"{self.kind} {self.part} ({self.amount:.0%} of the disk's IOPS: "
                    f"{disk_iops(self):,})")
        unit = {"slow": "of the rate", "lossy": "of packets dropped", "latent": "ms added"}
        amount = (f"{self.amount:g}" if self.finding_kind == "latent"
                  else f"{self.amount:.0%}")
        return f"{self.kind} {self.part} ({amount} {unit[self.finding_kind]})"


def draw(rng: random.Random, nodes: Sequence[str], kind: str) -> Fault:
    """A fault of ``kind`` on nodes picked by ``rng`` (the bench prints its seed)."""
    if kind not in KINDS:
        raise ValueError(f"unknown fault kind {kind!r}; known: {', '.join(KINDS)}")
    if kind == "healthy":
        return Fault(kind, (), 0.0)
    hosts = tuple(rng.sample(list(nodes), 1 if kind in NODE_KINDS else 2))
    return Fault(kind, hosts, KINDS[kind][1])


def filter_ruleset(inbound: Sequence[str]) -> str:
    """An nft table of drop rules on what reaches the host over its own link (eth0: the
    uplinks to the platform are on loopback, untouched). Drops are made where the packet
    arrives: one dropped on its sender's own output is a local error that TCP sends again
    without counting a retransmit, as if the packet had never left (measured: 1% dropped on
    output gave 0 retransmits and the full rate; ICMP's losses showed)."""
    return "\n".join([
        f"table ip {FILTER_TABLE} {{",
        "  chain input {", "    type filter hook input priority 0; policy accept;",
        *(f"    iifname \"eth0\" {r}" for r in inbound), "  }", "}", ""])


def drop_random(share: float) -> str:
    return f"numgen random mod 10000 < {max(1, round(share * 10000))} drop"


def police(rate_mbit: float) -> str:
    """Traffic past ``rate_mbit`` dropped (a policer: TCP backs off under it)."""
    kbytes = max(1, round(rate_mbit * 1000 / 8))
    burst = max(64, kbytes // 50)  # 20 ms of traffic
    return f"limit rate over {kbytes} kbytes/second burst {burst} kbytes drop"


def latency_ruleset(addresses: Sequence[str]) -> str:
    """New TCP connections from the host toward ``addresses`` go to its latency relay; the
    relay's own onward connections carry BYPASS_MARK and pass."""
    return "\n".join([
        f"table ip {NAT_TABLE} {{", "  chain output {",
        "    type nat hook output priority -110; policy accept;",
        f"    meta mark {BYPASS_MARK:#x} return",
        f"    ip daddr {{ {', '.join(addresses)} }} meta l4proto tcp redirect to :{LATENCY_PORT}",
        "  }", "}", ""])


def inject(stack: LabStack, fault: Fault) -> None:
    lab = stack.lab
    if fault.kind == "slow-nic":
        host = fault.hosts[0]
        lab.shape(host, rate_of(stack, host) * fault.amount)
    elif fault.kind == "slow-link":
        a, b = fault.hosts
        for here, there in ((a, b), (b, a)):
            rate = min(rate_of(stack, here), rate_of(stack, there)) * fault.amount
            lab.nft(here, filter_ruleset([f"ip saddr {lab.address(there)} {police(rate)}"]))
    elif fault.kind == "lossy-node":
        # Its inbound packets at its own end; its outbound ones at each receiver's.
        host = fault.hosts[0]
        lab.nft(host, filter_ruleset([drop_random(fault.amount)]))
        for other in (h.name for h in lab.spec.hosts if h.name != host):
            lab.nft(other, filter_ruleset([f"ip saddr {lab.address(host)} "
                                           f"{drop_random(fault.amount)}"]))
    elif fault.kind == "lossy-link":
        a, b = fault.hosts
        for here, there in ((a, b), (b, a)):
            lab.nft(here, filter_ruleset([f"ip saddr {lab.address(there)} "
                                          f"{drop_random(fault.amount)}"]))
    elif fault.kind == "latent-node":
        (host,) = fault.hosts
        others = [h.name for h in lab.spec.hosts if h.name != host]
        # Each connection detours once, on the side that opens it: the node's toward every
        # other host, every other host's toward the node.
        plan = [(host, others), *((o, [host]) for o in others)]
        started = [(here, toward, stack.relay(
            f"fault-latency-{here}", [], host=here, wait=False,
            detours=["--detour", f"127.0.0.1:{LATENCY_PORT},{fault.amount:g}"]))
            for here, toward in plan]
        for here, toward, relay in started:  # each calibrates for a second: waited together
            relay_ready(relay)
            lab.nft(here, latency_ruleset([lab.address(t) for t in toward]))
    elif fault.kind == "slow-disk":
        (host,) = fault.hosts
        blkio.throttle(disk_group(stack, host), worker_pid(stack, host),
                       blkio.device_of(data_root()[0]), disk_iops(fault))


def clear(stack: LabStack, fault: Fault) -> None:
    """Undo ``inject``: the rates as the spec has them, the fault's nft tables, relays and
    blkio group gone (its processes back in the group they came from)."""
    lab = stack.lab
    for host in lab.spec.hosts:
        for table in (FILTER_TABLE, NAT_TABLE):
            sh("ip", "netns", "exec", lab.ns(host.name), "nft", "delete", "table", "ip", table,
               check=False)
    if fault.kind == "slow-nic":
        lab.shape(fault.hosts[0], rate_of(stack, fault.hosts[0]))
    if fault.kind == "slow-disk":
        blkio.release(disk_cgroup(stack, fault.hosts[0]))
    for proc in [p for p in stack.started if p.name.startswith("fault-latency-")]:
        proc.stop()
        stack.started.remove(proc)


def rate_of(stack: LabStack, host: str) -> float:
    rate = stack.lab.host(host).rate_mbit
    if not rate:
        raise ValueError(f"{host} has no rate in the lab spec: a fault cuts a shaped rate")
    return rate


def disk_iops(fault: Fault) -> int:
    return round(DISK_IOPS * fault.amount)


def disk_group(stack: LabStack, host: str) -> str:
    """The blkio group's name: the host's, qualified by its lab as its namespace is (two
    labs may both have an f1)."""
    return f"bench-lab-{stack.lab.ns(host).removeprefix(PREFIX)}"


def worker_pid(stack: LabStack, host: str) -> int:
    node = stack.nodes.get(host)
    if node is None or not node.worker.alive():
        raise ValueError(f"{host} has no running node worker: a slow disk slows its probes")
    return node.worker.popen.pid


def disk_cgroup(stack: LabStack, host: str) -> Path:
    """Where ``inject`` made the host's group: beside the group its worker came from."""
    name = disk_group(stack, host)
    node = stack.nodes.get(host)
    try:
        here = blkio.group_of(node.worker.popen.pid) if node is not None else None
    except (OSError, blkio.BlkioError):  # the worker has ended
        here = None
    if here is None:
        return blkio.ROOT / name
    return here if here.name == name else here / name
