"""A reference's servers take connections from the platform's enrolled nodes only.

The allow-list is the API's (GET /api/v1/reference/allowlist, the reference's key only); the
firewall is real: the agent's nft script applied inside a "reference" network namespace in
front of the real echo server, and clients in a second namespace connecting from an
allowed and a not-allowed address. Root and nft are needed for that part.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
import requests
from rest_framework.test import APIClient

from fleet.models import ReferenceEndpoint, Region
from fleet.services import reference_keys, revocation
from lab import netlab, procs
from workers.host.reference_firewall import Firewall, nft_script

ECHO_PORT = 7007
REFERENCE, ALLOWED, OTHER = "10.217.0.1", "10.217.0.2", "10.217.0.3"


@pytest.fixture
def reference_key(hangzhou: Region) -> str:
    endpoint = ReferenceEndpoint.objects.create(region=hangzhou, name="ref1", host=REFERENCE,
                                                echo_port=ECHO_PORT)
    return reference_keys.issue(endpoint)


def allowlist(headers: dict[str, str]) -> Any:
    client = APIClient()
    client.credentials(**{"HTTP_AUTHORIZATION": headers["Authorization"]} if headers else {})
    return client.get("/api/v1/reference/allowlist")


# The endpoint


def test_the_list_holds_the_active_nodes_addresses_and_not_a_revoked_ones(
        enrol_node: Any, reference_key: str) -> None:
    enrol_node("hz-1", address="10.0.0.5")  # observed at 127.0.0.1, as every test host
    enrol_node("hz-2", address="2001:db8::7")
    revoked = enrol_node("hz-3", address="10.0.0.9")
    revocation.revoke(revoked.node, "test")
    response = allowlist({"Authorization": f"Reference {reference_key}"})
    assert response.status_code == 200, response.content
    body = response.json()
    assert body["addresses"] == ["10.0.0.5", "127.0.0.1", "2001:db8::7"]
    assert isinstance(body["generated_at"], float)


def test_a_trial_agent_is_a_node_too(buyer: Any, enrol_node: Any, reference_key: str) -> None:
    from fleet.models import Node
    from tests.fixtures import trial_agent

    agent = trial_agent(buyer, enrol_node("hz-1"))
    Node.objects.filter(pk=agent.node.pk).update(observed_address="192.0.2.44")
    response = allowlist({"Authorization": f"Reference {reference_key}"})
    assert "192.0.2.44" in response.json()["addresses"]


def test_only_a_reference_key_reads_the_list(buyer: Any, enrol_node: Any,
                                              reference_key: str) -> None:
    node = enrol_node("hz-1", address="10.0.0.5")
    endpoint_pk = reference_key.split(".")[0]
    for headers in ({}, {"Authorization": f"Node {node.api_key}"},
                    {"Authorization": f"Token {buyer.token}"},
                    {"Authorization": f"Reference {endpoint_pk}.guessed"},
                    {"Authorization": f"Reference {reference_key[:-1]}"}):
        response = allowlist(headers)
        assert response.status_code in (401, 403), (headers, response.content)
        assert b"10.0.0.5" not in response.content


# The firewall, in namespaces


@dataclass
class Namespaces:
    """A reference namespace and a client namespace holding two addresses, on a veth pair."""

    prefix: str

    @property
    def reference(self) -> str:
        return f"{self.prefix}-ref"

    @property
    def client(self) -> str:
        return f"{self.prefix}-cli"

    def nft(self, script: str) -> None:
        done = subprocess.run(["ip", "netns", "exec", self.reference, "nft", "-f", "-"],
                              input=script, capture_output=True, text=True, check=False)
        if done.returncode != 0:
            raise RuntimeError(f"nft -f -: {done.stderr.strip()}")

    def connects(self, source: str) -> bool:
        """Whether a TCP connection from ``source`` to the echo server is accepted (a
        dropped SYN shows as a timeout)."""
        probe = ("import socket, sys\n"
                 "s = socket.socket(); s.settimeout(1.0); s.bind((sys.argv[1], 0))\n"
                 "try:\n    s.connect((sys.argv[2], int(sys.argv[3])))\n"
                 "except OSError:\n    sys.exit(1)\n")
        done = subprocess.run(["ip", "netns", "exec", self.client, sys.executable, "-c", probe,
                               source, REFERENCE, str(ECHO_PORT)], capture_output=True,
                              check=False, timeout=15)
        return done.returncode == 0


def need_root_and_nft() -> None:
    if os.geteuid() != 0:
        pytest.skip("needs root: it creates network namespaces and nftables rules")
    if shutil.which("nft") is None:
        pytest.skip("needs nft (Debian: apt-get install nftables)")


@pytest.fixture
def namespaces(tmp_path: Path) -> Iterator[Namespaces]:
    need_root_and_nft()
    tag = f"bfw{os.getpid() % 10_000_000}"  # per process: parallel runs never meet
    ns = Namespaces(tag)
    here, there = f"{tag}r", f"{tag}c"
    sh = netlab.sh
    try:
        sh("ip", "netns", "add", ns.reference)
        sh("ip", "netns", "add", ns.client)
        sh("ip", "link", "add", here, "type", "veth", "peer", "name", there)
        sh("ip", "link", "set", here, "netns", ns.reference)
        sh("ip", "link", "set", there, "netns", ns.client)
        for name, link, addresses in ((ns.reference, here, [REFERENCE]),
                                      (ns.client, there, [ALLOWED, OTHER])):
            for address in addresses:
                sh("ip", "-n", name, "addr", "add", f"{address}/24", "dev", link)
            sh("ip", "-n", name, "link", "set", link, "up")
            sh("ip", "-n", name, "link", "set", "lo", "up")
        echo = procs.start("echo-server", ["ip", "netns", "exec", ns.reference, sys.executable,
                                           "-m", "workers.cli", "echo-server", "--bind",
                                           REFERENCE, "--port", str(ECHO_PORT)], tmp_path,
                           env={"PYTHONPATH": str(procs.REPO)})
        procs.wait_for(lambda: ns.connects(ALLOWED), 30, "the echo server in its namespace")
        yield ns
        echo.stop()
    finally:
        # Kills what is left inside (the echo server), removes both and a stray veth.
        netlab.cleanup(f"{tag}-", tag)


@pytest.mark.serial
def test_only_an_allowed_address_reaches_the_server_and_a_new_list_flips_it(
        namespaces: Namespaces) -> None:
    assert namespaces.connects(OTHER)  # no firewall yet: open to anyone
    namespaces.nft(nft_script([ALLOWED], [ECHO_PORT]))
    assert namespaces.connects(ALLOWED)
    assert not namespaces.connects(OTHER)
    namespaces.nft(nft_script([ALLOWED], [ECHO_PORT]))  # applied again: the same
    assert namespaces.connects(ALLOWED) and not namespaces.connects(OTHER)
    namespaces.nft(nft_script([OTHER, "2001:db8::1"], [ECHO_PORT]))
    assert namespaces.connects(OTHER)
    assert not namespaces.connects(ALLOWED)
    namespaces.nft(nft_script([], [ECHO_PORT]))  # no node at all: nobody
    assert not namespaces.connects(ALLOWED) and not namespaces.connects(OTHER)


@pytest.mark.serial
def test_the_agents_firewall_follows_the_platforms_nodes_and_holds_when_it_is_gone(
        transactional_db: Any, namespaces: Namespaces, enrol_node: Any, hangzhou: Region,
        live_server: Any, tmp_path: Path) -> None:
    endpoint = ReferenceEndpoint.objects.create(region=hangzhou, name="ref1", host=REFERENCE)
    session = requests.Session()
    session.headers["Authorization"] = f"Reference {reference_keys.issue(endpoint)}"
    # The agent's firewall, fetching from the live platform and applying in the namespace.
    wall = Firewall(session, live_server.url, [ECHO_PORT], interval=0, apply=namespaces.nft)
    wall.guard()
    assert not namespaces.connects(ALLOWED)  # closed before the first list
    node = enrol_node("hz-1", address=ALLOWED)
    assert wall.refresh() is not None
    assert namespaces.connects(ALLOWED) and not namespaces.connects(OTHER)

    revocation.revoke(node.node, "test")
    enrol_node("hz-2", address=OTHER)
    assert wall.refresh() is not None
    assert namespaces.connects(OTHER) and not namespaces.connects(ALLOWED)

    # The platform gone: the list in force stays (never opened up, never emptied), also
    # for a restarted agent, whose guard keeps the sets it finds.
    wall.url = "http://127.0.0.1:1/api/v1/reference/allowlist"
    line = wall.refresh()
    assert line is not None and "keeping the last one" in line
    wall.guard()
    assert namespaces.connects(OTHER) and not namespaces.connects(ALLOWED)
