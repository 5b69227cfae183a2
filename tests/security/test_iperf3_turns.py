"""A reference's iperf3 server lets in the run holding its turn, and no one else.

Real parts: the live server and PostgreSQL, an `iperf3 -s` run with iperf3's own
authentication (--rsa-private-key-path, --authorized-users-path), its agent as a `benchctl
reference-agent --iperf3-auth` process keeping the users file at the platform's turns, and
real `iperf3 -c` clients. Before: anyone who reached the server could start a test at any
time (`iperf3 -c ref -t 86400 -b 1k` held it for a day); a node could test between its turns.
"""

from __future__ import annotations

import subprocess
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
import requests

from benchmarks import runner
from benchmarks.parsers.iperf3 import Iperf3Error, parse_iperf3
from benchmarks.probes.network import turn_credential
from fleet.models import ReferenceEndpoint, Region
from fleet.services import reference_keys
from jobs.services import iperf3_turns, lifecycle, submission
from lab import procs
from workers.host.iperf3_auth import (
    USERS,
    Iperf3Turns,
    ensure_keys,
    server_args,
    users_text,
    write_users,
)

pytestmark = pytest.mark.slow

PEER = "reference:hangzhou:ref1"


@dataclass
class AuthReference:
    endpoint: ReferenceEndpoint
    port: int
    users: Path  # the server's users file, as the agent keeps it
    key: str  # the agent's reference key


@pytest.fixture
def auth_reference(hangzhou: Region, live_server: Any, tmp_path: Path) -> Iterator[AuthReference]:
    auth = ensure_keys(tmp_path / "iperf3-auth")
    port = procs.free_port()
    server = procs.start_iperf3_server(port, tmp_path, report_log=tmp_path / "iperf3.json",
                                       extra=server_args(auth))
    endpoint = ReferenceEndpoint.objects.create(region=hangzhou, name="ref1", host="127.0.0.1",
                                                iperf3_port=port)
    key_file = tmp_path / "reference.key"
    key = reference_keys.issue(endpoint)
    key_file.write_text(key)
    agent = procs.start("reference-agent", procs.reference_agent_argv(
        live_server.url, key_file, tmp_path / "iperf3.json", None, auth, iperf3_port=port),
        tmp_path, env={"PYTHONPATH": str(procs.REPO)})
    procs.wait_for(lambda: ReferenceEndpoint.objects.exclude(iperf3_public_key="").filter(
        pk=endpoint.pk).exists() or not agent.alive(), 60, "the agent's public key")
    assert agent.alive(), agent.log()
    yield AuthReference(endpoint, port, auth / USERS, key)
    procs.stop_all([agent, server])


def iperf3(port: int, credential: dict[str, str] | None) -> float:
    """A one-second test with ``credential``: the receiver's Gbit/s, or Iperf3Error.

    With -J, iperf3 3.12's server exits after a refused test and its loop starts it again
    within a fraction of a second: a refused connection then is tried again, as the probe
    does."""
    for _ in range(20):
        with turn_credential(credential) as (auth, env):
            done = runner.run(["iperf3", "-J", "-c", "127.0.0.1", "-p", str(port), "-t", "1",
                               "--connect-timeout", "3000", *auth], timeout=30, env=env)
        try:
            return parse_iperf3(done.stdout).receiver_bps / 1e9
        except Iperf3Error as exc:
            if "Connection refused" not in str(exc):
                raise
            time.sleep(0.2)
    raise AssertionError("the reference's iperf3 server did not come back")


def refused(port: int, credential: dict[str, str] | None) -> str:
    with pytest.raises(Iperf3Error) as caught:
        iperf3(port, credential)
    return str(caught.value)


def ask(node: Any, run_id: int, attempt: Any, **extra: Any) -> dict[str, Any]:
    response = node.client().post(f"/api/v1/node/runs/{run_id}/reference-slot", {
        "attempt_id": str(attempt), "peer": PEER, "seconds": 30} | extra, format="json")
    assert response.status_code == 200, response.content
    body: dict[str, Any] = response.json()
    return body


def test_only_the_run_holding_the_turn_starts_a_test_and_only_while_it_holds_it(
        auth_reference: AuthReference, buyer: Any, enrol_node: Any) -> None:
    a, b = enrol_node("hz-1"), enrol_node("hz-2")
    job, _ = submission.submit(buyer.user, [a.node.pk, b.node.pk], "network")
    run_a, run_b = job.runs.get(node=a.node), job.runs.get(node=b.node)
    claim_a, claim_b = lifecycle.claim(a.node, run_a.pk), lifecycle.claim(b.node, run_b.pk)
    port = auth_reference.port

    granted = ask(a, run_a.pk, claim_a.attempt.id)
    mine = granted["iperf3"]
    assert granted["granted"] and mine["username"] == f"run{run_a.pk}"
    assert mine["public_key"].startswith("-----BEGIN PUBLIC KEY-----")
    assert ask(a, run_a.pk, claim_a.attempt.id)["iperf3"] == mine  # asking again: the same hold
    procs.wait_for(lambda: mine["username"] in auth_reference.users.read_text(), 10,
                   "the agent to write the turn")
    assert iperf3(port, mine) > 0.1  # the holder's test runs

    # Anyone else is refused while a holds the turn: no credential (an outsider past the
    # firewall, a neighbour between its turns), a guessed password, b waiting its turn.
    assert "authorization failed" in refused(port, None)
    assert "authorization failed" in refused(port, mine | {"password": "0" * 32})
    waiting = ask(b, run_b.pk, claim_b.attempt.id)
    assert not waiting["granted"] and "iperf3" not in waiting

    # a gives its turn back: its credential ends with it; b's hold is b's own.
    ask(a, run_a.pk, claim_a.attempt.id, release=True)
    theirs = ask(b, run_b.pk, claim_b.attempt.id)["iperf3"]
    assert theirs["password"] != mine["password"]
    procs.wait_for(lambda: mine["username"] not in auth_reference.users.read_text()
                   and theirs["username"] in auth_reference.users.read_text(), 10,
                   "the agent to move the turn")
    assert "authorization failed" in refused(port, mine)
    assert iperf3(port, theirs) > 0.1

    # A new hold of a's is a new password: one taken earlier cannot be kept for later.
    ask(b, run_b.pk, claim_b.attempt.id, release=True)
    again = ask(a, run_a.pk, claim_a.attempt.id)["iperf3"]
    assert again["password"] != mine["password"]


def test_a_test_that_outlives_its_turn_is_ended_and_the_next_holder_tests(
        auth_reference: AuthReference, buyer: Any, enrol_node: Any, tmp_path: Path) -> None:
    # The holder starts a day-long trickle in its turn (`-t 86400 -b 1k` held the reference
    # for a day before) and gives the turn back, as a cheat keeping its neighbours off would.
    a, b = enrol_node("hz-1"), enrol_node("hz-2")
    job, _ = submission.submit(buyer.user, [a.node.pk, b.node.pk], "network")
    run_a, run_b = job.runs.get(node=a.node), job.runs.get(node=b.node)
    claim_a, claim_b = lifecycle.claim(a.node, run_a.pk), lifecycle.claim(b.node, run_b.pk)
    mine = ask(a, run_a.pk, claim_a.attempt.id)["iperf3"]
    procs.wait_for(lambda: mine["username"] in auth_reference.users.read_text(), 10,
                   "the agent to write the turn")
    out = tmp_path / "trickle.json"
    with turn_credential(mine) as (auth, env), out.open("w") as sink:
        trickle = subprocess.Popen(
            ["iperf3", "-J", "-c", "127.0.0.1", "-p", str(auth_reference.port), "-t", "86400",
             "-b", "1k", *auth], env=env, stdout=sink)
        try:
            procs.wait_for(lambda: connections(auth_reference.port) >= 2 or trickle.poll() is not None,
                           10, "the long test to start", interval=0.2)
            assert trickle.poll() is None  # it runs: a holder may start it
            ask(a, run_a.pk, claim_a.attempt.id, release=True)
            procs.wait_for(lambda: trickle.poll() is not None, 15, "the agent to end the test")
        finally:
            trickle.kill()
            trickle.wait()
    assert '"error"' in out.read_text()  # ended from the server's side, not finished
    theirs = ask(b, run_b.pk, claim_b.attempt.id)["iperf3"]
    procs.wait_for(lambda: theirs["username"] in auth_reference.users.read_text(), 10,
                   "the agent to write the next turn")
    assert iperf3(auth_reference.port, theirs) > 0.1


def connections(port: int) -> int:
    """The server's established connections (a running test has its control and data ones)."""
    listed = runner.run(["ss", "-Htn", "state", "established", f"( sport = :{port} )"], timeout=5)
    return len([line for line in listed.stdout.splitlines() if line.strip()])


def test_the_turns_and_the_key_are_the_reference_agents_alone(
        auth_reference: AuthReference, live_server: Any, enrol_node: Any, buyer: Any,
        hangzhou: Region) -> None:
    base = f"{live_server.url}/api/v1/reference"
    node = enrol_node("hz-1")
    no_key: dict[str, str] = {}
    for headers in (node.headers, buyer.headers, no_key):
        assert requests.get(f"{base}/iperf3-users", headers=headers, timeout=10).status_code in (401, 403)
        assert requests.put(f"{base}/iperf3-key", headers=headers, timeout=10,
                            json={"public_key": "x"}).status_code in (401, 403)
    agent = {"Authorization": f"Reference {auth_reference.key}"}
    for bad, why in (("not a key", "not a PEM public key"),
                     (small_rsa_key(), "2048"), ("x" * 9000, "8192")):
        response = requests.put(f"{base}/iperf3-key", headers=agent, json={"public_key": bad},
                                timeout=10)
        assert response.status_code == 400 and why in response.text, response.text
    assert ReferenceEndpoint.objects.get(pk=auth_reference.endpoint.pk).iperf3_public_key.startswith(
        "-----BEGIN PUBLIC KEY-----")  # a refused key replaced nothing

    # Another region's reference sees no turn of this server's.
    job, _ = submission.submit(buyer.user, [node.node.pk], "network")
    run = job.runs.get()
    claim = lifecycle.claim(node.node, run.pk)
    ask(node, run.pk, claim.attempt.id)
    shenzhen = Region.objects.create(code="shenzhen", province="Guangdong", city="Shenzhen")
    other = ReferenceEndpoint.objects.create(region=shenzhen, name="ref1", host="10.9.9.9")
    seen = {"Authorization": f"Reference {reference_keys.issue(other)}"}
    assert requests.get(f"{base}/iperf3-users", headers=seen, timeout=10).json()["users"] == []
    users = requests.get(f"{base}/iperf3-users", headers=agent, timeout=10).json()["users"]
    assert [u["username"] for u in users] == [iperf3_turns.username(run.pk)]


def small_rsa_key() -> str:
    from cryptography.hazmat.primitives import serialization
    from cryptography.hazmat.primitives.asymmetric import rsa

    key = rsa.generate_private_key(public_exponent=65537, key_size=1024)  # noqa: S505 - refused
    return key.public_key().public_bytes(serialization.Encoding.PEM,
                                         serialization.PublicFormat.SubjectPublicKeyInfo).decode()


def test_an_answer_writes_nothing_but_names_and_hashes_into_the_users_file() -> None:
    answer: list[Any] = [{"username": "run7", "hash": "a" * 64},
                         {"username": "run8\nroot", "hash": "b" * 64},
                         {"username": "run8\n", "hash": "b" * 64},
                         {"username": "run8", "hash": "b" * 64 + "\n"},
                         {"username": "run9", "hash": "c" * 63 + "\n"}, "run10,abc", {}]
    text = users_text(answer)
    assert text.splitlines()[1:] == ["run7," + "a" * 64]


def test_a_failing_fetch_keeps_the_last_turns_and_is_reported_once_while_it_fails(
        tmp_path: Path) -> None:
    turns = Iperf3Turns(requests.Session(), f"http://127.0.0.1:{procs.free_port()}",
                        tmp_path / "auth", port=procs.free_port(), timeout=2)
    write_users(turns.users, users_text([{"username": "run7", "hash": "a" * 64}]))
    turns.written = turns.users.read_text()
    first = turns.refresh()  # nothing answers at that port
    assert first is not None and "not fetched, keeping the last" in first
    assert turns.refresh() is None  # the agent's loop passes several times a second
    assert "run7," in turns.users.read_text()
