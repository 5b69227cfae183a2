"""The reference's iperf3 authentication: its key pair, and its users file kept at the turns
the platform has granted (`benchctl reference-agent --iperf3-auth DIR`).

The reference's server runs `iperf3 -s --rsa-private-key-path DIR/private.pem
--authorized-users-path DIR/users.csv`. iperf3 reads the users file at every test, so the
agent rewriting it between tests is how a turn starts and ends on the server: the platform
lists the runs holding the server's turn now (GET /api/v1/reference/iperf3-users, each as
iperf3's `username,sha256("{username}password")`), and only the run that was handed that
password with its turn can start a test. The private key never leaves the reference; the
agent hands the platform its public half (PUT /api/v1/reference/iperf3-key), which the
platform gives each turn's holder with its credential.

A test started inside a turn could still run past it (`-t 86400 -b 1k`): iperf3 3.12 has no
server-side limit on a test's length. So at every pass the agent also ends every connection
to the server from an address that holds no turn now (`ss -K`): a test lasts its turn.
"""

from __future__ import annotations

import os
import re
from pathlib import Path
from typing import Any

import requests
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric import rsa

from benchmarks import runner
from benchmarks.parsers.ss import established_peers
from workers.host.reference_firewall import split

PRIVATE, PUBLIC, USERS = "private.pem", "public.pem", "users.csv"
RSA_BITS = 2048
USERNAME = re.compile(r"[A-Za-z0-9_-]{1,64}")
HASH = re.compile(r"[0-9a-f]{64}")
HEADER = "# the runs holding this server's turn (benchctl reference-agent writes it)\n"


def ensure_keys(directory: Path) -> Path:
    """The reference's key pair and an empty users file in ``directory`` (made where missing;
    an existing pair is kept, so a restarted agent does not change the server's key)."""
    directory.mkdir(parents=True, exist_ok=True, mode=0o700)
    private = directory / PRIVATE
    if not private.exists():
        key = rsa.generate_private_key(public_exponent=65537, key_size=RSA_BITS)
        fd = os.open(private.with_suffix(".tmp"), os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
        with os.fdopen(fd, "wb") as out:
            out.write(key.private_bytes(serialization.Encoding.PEM,
                                        serialization.PrivateFormat.TraditionalOpenSSL,
                                        serialization.NoEncryption()))
        private.with_suffix(".tmp").replace(private)
        (directory / PUBLIC).write_bytes(key.public_key().public_bytes(
            serialization.Encoding.PEM, serialization.PublicFormat.SubjectPublicKeyInfo))
    if not (directory / USERS).exists():
        write_users(directory / USERS, HEADER)
    return directory


def users_text(users: list[dict[str, Any]]) -> str:
    """The users file for these users; a line that is not a plain name and a sha256 is left
    out, so no answer can write anything else into the file."""
    lines = [f"{u['username']},{u['hash']}\n" for u in users if isinstance(u, dict)
             and USERNAME.fullmatch(str(u.get("username", ""))) and HASH.fullmatch(str(u.get("hash", "")))]
    return HEADER + "".join(lines)


def server_args(directory: Path) -> list[str]:
    """`iperf3 -s` arguments that let in only the turns' holders, from ``directory``."""
    return ["--rsa-private-key-path", str(directory / PRIVATE),
            "--authorized-users-path", str(directory / USERS)]


def write_users(path: Path, text: str) -> None:
    """Replace the file whole: iperf3 never reads half of it."""
    tmp = path.with_suffix(".tmp")
    tmp.write_text(text)
    tmp.replace(path)


class Iperf3Turns:
    """Keeps the users file at the platform's list, and cuts a test that outlived its turn;
    refreshed by the agent's loop."""

    def __init__(self, session: requests.Session, api_url: str, directory: Path,
                 port: int = 5201, timeout: float = 10) -> None:
        self.session, self.timeout, self.port = session, timeout, port
        self.base = f"{api_url.rstrip('/')}/api/v1/reference"
        self.directory = ensure_keys(directory)
        self.users = self.directory / USERS
        self.written = self.users.read_text()
        self.said: str | None = None  # the last line reported: one pass's news is said once

    def publish(self) -> None:
        """Hand the platform the public key its turns' holders encrypt their credential with."""
        response = self.session.put(f"{self.base}/iperf3-key", timeout=self.timeout, json={
            "public_key": (self.directory / PUBLIC).read_text()})
        if response.status_code != 200:
            raise RuntimeError(f"HTTP {response.status_code}: {response.text[:300]}")

    def refresh(self) -> str | None:
        """Fetch the turns, rewrite the file when they changed and cut what runs outside
        them; a line to report when something was cut or could not be done, once while it
        stays so (the loop passes several times a second; a failed fetch keeps the last
        file and cuts nothing: a turn ends by running out anyway)."""
        line = self._refresh()
        if line == self.said:
            return None
        self.said = line
        return line

    def _refresh(self) -> str | None:
        try:
            response = self.session.get(f"{self.base}/iperf3-users", timeout=self.timeout)
            response.raise_for_status()
            users = response.json().get("users", [])
            text = users_text(users)
            # As the firewall reads its list: IP literals, IPv4-mapped ones as IPv4 (as ss
            # writes a dual-stack server's IPv4 clients), anything else left out.
            holders = set().union(*split(a for u in users if isinstance(u, dict)
                                         for a in u.get("addresses", [])))
        except (requests.RequestException, ValueError, AttributeError, TypeError) as exc:
            return f"reference agent: iperf3 turns not fetched, keeping the last: {exc}"
        if text != self.written:
            write_users(self.users, text)
            self.written = text
        try:
            cut = self.cut(holders)
        except (runner.CommandNotFound, runner.CommandTimeout, RuntimeError) as exc:
            return f"reference agent: cannot end tests outside the turns: {exc}"
        if cut:
            return f"reference agent: ended iperf3 tests from {', '.join(cut)}: outside any turn"
        return None

    def cut(self, holders: set[str]) -> list[str]:
        """End every connection to the iperf3 server from an address that holds no turn now
        (`ss -K`, CAP_NET_ADMIN): a test started in a turn stops when the turn ends, so a
        holder cannot keep the server past it with a day-long test. The addresses cut."""
        port = f"( sport = :{self.port} )"
        listed = runner.run(["ss", "-Htn", "state", "established", port], timeout=5)
        if listed.returncode != 0:
            raise RuntimeError(f"ss: {listed.stderr.strip()[:200]}")
        outside = sorted(established_peers(listed.stdout) - holders)
        for peer in outside:
            killed = runner.run(["ss", "-K", "-Htn", "state", "established", port, "dst", peer],
                                timeout=5)
            if killed.returncode != 0:
                raise RuntimeError(f"ss -K: {killed.stderr.strip()[:200]}")
        return outside
