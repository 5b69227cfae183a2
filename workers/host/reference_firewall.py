"""A reference's firewall: its servers' ports open to the platform's enrolled nodes only.

The agent (`benchctl reference-agent --firewall-ports`) fetches the allow-list (GET
/api/v1/reference/allowlist) and applies ``nft_script`` of it with ``nft -f -``. The script
is one nft transaction: it replaces the whole ``inet benchref`` table at once, so there is
no moment with the ports open or the sets half filled, and applying it twice is applying it
once. Connections already established stay up (a test in progress is not cut off when a
node is revoked mid-test); new ones from any other source are dropped, silently, as a
closed host would, so a scanner learns nothing of the servers behind.
"""

from __future__ import annotations

import ipaddress
import time
from collections.abc import Callable, Iterable
from typing import Any

import requests

from benchmarks import runner

TABLE = "benchref"
NFT_TIMEOUT = 10.0


def split(addresses: Iterable[str]) -> tuple[list[str], list[str]]:
    """The valid IPv4 and IPv6 addresses, sorted and unique; anything else is left out (a
    host name or garbage in the list must not make nft refuse the whole script and leave the
    previous set in place for ever)."""
    v4: set[ipaddress.IPv4Address] = set()
    v6: set[ipaddress.IPv6Address] = set()
    for text in addresses:
        try:
            address = ipaddress.ip_address(str(text).strip())
        except ValueError:
            continue
        if isinstance(address, ipaddress.IPv6Address) and address.ipv4_mapped:
            # A dual-stack server's view of an IPv4 client: on the wire it is IPv4.
            address = address.ipv4_mapped
        if isinstance(address, ipaddress.IPv4Address):
            v4.add(address)
        else:
            v6.add(address)
    return [str(a) for a in sorted(v4)], [str(a) for a in sorted(v6)]


def parse_ports(text: str) -> list[int]:
    """``5201,7007`` -> [5201, 7007]; raises ValueError on anything but ports 1-65535."""
    ports = sorted({int(part) for part in text.split(",") if part.strip()})
    if not ports or not all(0 < p < 65536 for p in ports):
        raise ValueError(f"ports must be comma-separated numbers 1-65535, not {text!r}")
    return ports


def _set(name: str, kind: str, members: list[str]) -> list[str]:
    lines = [f"\tset {name} {{", f"\t\ttype {kind}"]
    if members:  # nft refuses an empty `elements = { }`
        lines.append(f"\t\telements = {{ {', '.join(members)} }}")
    return [*lines, "\t}"]


def _rules(ports: Iterable[int]) -> list[str]:
    port_list = ", ".join(str(p) for p in sorted(set(ports)))
    return [
        "\tchain input {",
        "\t\ttype filter hook input priority 0; policy accept;",
        # The reference's own health checks and the agent's tests of its servers.
        '\t\tiif "lo" accept',
        f"\t\ttcp dport {{ {port_list} }} ct state new ip saddr != @nodes4 drop",
        f"\t\ttcp dport {{ {port_list} }} ct state new ip6 saddr != @nodes6 drop",
        "\t}",
    ]


def nft_script(addresses: Iterable[str], ports: Iterable[int]) -> str:
    """The nft script that (re)creates table ``inet benchref``: new TCP connections to
    ``ports`` are dropped unless they come from ``addresses`` or loopback."""
    v4, v6 = split(addresses)
    lines = [
        # Declaring the table first makes the delete succeed when it does not exist yet.
        f"table inet {TABLE}",
        f"delete table inet {TABLE}",
        f"table inet {TABLE} {{",
        *_set("nodes4", "ipv4_addr", v4),
        *_set("nodes6", "ipv6_addr", v6),
        *_rules(ports),
        "}",
    ]
    return "\n".join(lines) + "\n"


def guard_script(ports: Iterable[int]) -> str:
    """What the agent applies before it has a list: the ports closed to all but the
    addresses already in the sets (a restarted agent's last list), created empty if there
    is no table yet. Until the platform answers, the reference stays as shut as it was."""
    lines = [
        f"table inet {TABLE} {{",
        *_set("nodes4", "ipv4_addr", []),  # an existing set keeps its elements
        *_set("nodes6", "ipv6_addr", []),
        "\tchain input {",
        "\t\ttype filter hook input priority 0; policy accept;",
        "\t}",
        "}",
        f"flush chain inet {TABLE} input",
        f"table inet {TABLE} {{",
        *_rules(ports),
        "}",
    ]
    return "\n".join(lines) + "\n"


def apply_nft(script: str) -> None:
    """``nft -f -``: one transaction, all of it or none; raises with nft's own message."""
    done = runner.run(["nft", "-f", "-"], timeout=NFT_TIMEOUT, stdin=script)
    if done.returncode != 0:
        raise RuntimeError(f"nft -f -: {done.stderr.strip() or done.stdout.strip()}")


class Firewall:
    """The agent's side: fetch the allow-list every ``interval`` seconds and apply it when
    it changed. A failed fetch or apply changes nothing: the last list stays in force (the
    reference never opens up because the platform did not answer), and it is tried again
    at the next interval."""

    def __init__(self, session: requests.Session, api_url: str, ports: list[int],
                 interval: float = 10.0, timeout: float = 10.0,
                 apply: Callable[[str], None] = apply_nft,
                 clock: Callable[[], float] = time.monotonic) -> None:
        self.url = f"{api_url.rstrip('/')}/api/v1/reference/allowlist"
        self.session = session
        self.ports = ports
        self.interval = interval
        self.timeout = timeout
        self.apply = apply
        self.clock = clock
        self.applied: str | None = None  # the script now in force, as this agent applied it
        self.next_at = clock()

    def guard(self) -> None:
        """Close the ports before the first fetch; raises where nft cannot be run."""
        self.apply(guard_script(self.ports))

    def wait(self) -> float:
        """Seconds until the next refresh is due."""
        return max(0.0, self.next_at - self.clock())

    def fetch(self) -> list[str]:
        response = self.session.get(self.url, timeout=self.timeout)
        if response.status_code != 200:
            raise RuntimeError(f"HTTP {response.status_code}: {response.text[:300]}")
        body: Any = response.json()
        addresses = body.get("addresses") if isinstance(body, dict) else None
        if not isinstance(addresses, list):
            raise ValueError("the allow-list has no list of addresses")
        return [str(a) for a in addresses]

    def refresh(self) -> str | None:
        """Fetch and apply when due; a line to report (applied, or why not), or None."""
        if self.wait() > 0:
            return None
        self.next_at = self.clock() + self.interval
        try:
            addresses = self.fetch()
        except (requests.RequestException, RuntimeError, ValueError) as exc:
            return f"reference agent: allow-list not fetched, keeping the last one: {exc}"
        script = nft_script(addresses, self.ports)
        if script == self.applied:
            return None
        try:
            self.apply(script)
        except (runner.CommandNotFound, runner.CommandTimeout, RuntimeError) as exc:
            return f"reference agent: allow-list not applied, keeping the last one: {exc}"
        self.applied = script
        v4, v6 = split(addresses)
        return (f"reference agent: ports {', '.join(map(str, self.ports))} open to "
                f"{len(v4) + len(v6)} node address(es)")
