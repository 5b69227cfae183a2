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
"""

from __future__ import annotations

import os
import re
from pathlib import Path
from typing import Any

import requests
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric import rsa

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


def write_users(path: Path, text: str) -> None:
    """Replace the file whole: iperf3 never reads half of it."""
    tmp = path.with_suffix(".tmp")
    tmp.write_text(text)
    tmp.replace(path)


class Iperf3Turns:
    """Keeps the users file at the platform's list; refreshed by the agent's loop."""

    def __init__(self, session: requests.Session, api_url: str, directory: Path,
                 timeout: float = 10) -> None:
        self.session, self.timeout = session, timeout
        self.base = f"{api_url.rstrip('/')}/api/v1/reference"
        self.directory = ensure_keys(directory)
        self.users = self.directory / USERS
        self.written = self.users.read_text()

    def publish(self) -> None:
        """Hand the platform the public key its turns' holders encrypt their credential with."""
        response = self.session.put(f"{self.base}/iperf3-key", timeout=self.timeout, json={
            "public_key": (self.directory / PUBLIC).read_text()})
        if response.status_code != 200:
            raise RuntimeError(f"HTTP {response.status_code}: {response.text[:300]}")

    def refresh(self) -> str | None:
        """Fetch the turns and rewrite the file when they changed; a line to report when the
        fetch failed (the file then keeps the last list: a turn ends by running out anyway)."""
        try:
            response = self.session.get(f"{self.base}/iperf3-users", timeout=self.timeout)
            response.raise_for_status()
            text = users_text(response.json().get("users", []))
        except (requests.RequestException, ValueError, AttributeError) as exc:
            return f"reference agent: iperf3 turns not fetched, keeping the last: {exc}"
        if text != self.written:
            write_users(self.users, text)
            self.written = text
        return None
