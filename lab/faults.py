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
* ``healthy``: nothing injected: the diagnosis should name no part.

A noisy neighbour and a slow disk are not here yet: every lab host shares the machine's two
cores and its one disk, so load beside one node is load beside all of them.
"""

from __future__ import annotations

import random
from collections.abc import Sequence
from dataclasses import dataclass

from lab.netlab import sh
from lab.relay import BYPASS_MARK
from lab.stack import LabStack, relay_ready

# (kind, the finding's kind, how much: a share of the rate, a share of packets, or ms)
KINDS: dict[str, tuple[str, float]] = {
    "slow-nic": ("slow", 0.3),
    "slow-link": ("slow", 0.3),
    "lossy-node": ("lossy", 0.01),
    "lossy-link": ("lossy", 0.01),
    "latent-node": ("latent", 5.0),
    "healthy": ("", 0.0),
}
NODE_KINDS = frozenset({"slow-nic", "lossy-node", "latent-node"})
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
        return (f"node:{self.hosts[0]}" if len(self.hosts) == 1
                else f"link:{'-'.join(sorted(self.hosts))}")

    @property
    def finding_kind(self) -> str:
        return KINDS[self.kind][0]

    def describe(self) -> str:
        if not self.hosts:
            return "healthy"
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


def clear(stack: LabStack, fault: Fault) -> None:
    """Undo ``inject``: the rates as the spec has them, the fault's nft tables and relays gone."""
    lab = stack.lab
    for host in lab.spec.hosts:
        for table in (FILTER_TABLE, NAT_TABLE):
            sh("ip", "netns", "exec", lab.ns(host.name), "nft", "delete", "table", "ip", table,
               check=False)
    if fault.kind == "slow-nic":
        lab.shape(fault.hosts[0], rate_of(stack, fault.hosts[0]))
    for proc in [p for p in stack.started if p.name.startswith("fault-latency-")]:
        proc.stop()
        stack.started.remove(proc)


def rate_of(stack: LabStack, host: str) -> float:
    rate = stack.lab.host(host).rate_mbit
    if not rate:
        raise ValueError(f"{host} has no rate in the lab spec: a fault cuts a shaped rate")
    return rate
