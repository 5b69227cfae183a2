"""A reference turn's own iperf3 credential: the reference's iperf3 server lets in only the
run that holds its turn, and only while it holds it.

The reference's iperf3 server runs with iperf3's authentication (`--rsa-private-key-path`,
`--authorized-users-path`); its agent keeps the users file at what ``users`` lists (the holds
running on its server now), and the run gets its username and password with the turn
(``credential``). Nothing secret is stored: the password is derived from the platform's
secret, the server, the run and the moment its hold began, so a hold given back, run out or
taken over ends its credential, and a new hold is a new password. A node outside its turn,
an enrolled neighbour or a client past the firewall cannot start a test (`test
authorization failed`), and a test still running when its turn ended (`-t 86400`) is cut
by the agent: no one holds the reference between the turns.
"""

from __future__ import annotations

import hashlib
import hmac
from datetime import datetime
from typing import Any

from django.conf import settings

from jobs.models import ReferenceSlot, Run


def username(run_id: int) -> str:
    return f"run{run_id}"


def credential(server: int, run_id: int, taken_at: datetime) -> tuple[str, str]:
    """The username and password of the run's hold of ``server`` that began at ``taken_at``."""
    message = f"iperf3-turn:{server}:{run_id}:{taken_at.timestamp():.6f}".encode()
    password = hmac.new(settings.SECRET_KEY.encode(), message, hashlib.sha256).hexdigest()[:32]
    return username(run_id), password


def user_hash(user: str, password: str) -> str:
    """What iperf3's authorized-users file holds for a user: sha256 of "{user}password"."""
    return hashlib.sha256(f"{{{user}}}{password}".encode()).hexdigest()


def users(server: int, now: datetime) -> list[dict[str, Any]]:
    """The users the server lets in now: the run holding its turn, if its hold runs, with
    its node's addresses (a test from any other address is outside every turn: the agent
    ends it, so no test outlives the turn it started in)."""
    held = (ReferenceSlot.objects.filter(endpoint_id=server, expires_at__gte=now,
                                         run__status=Run.Status.RUNNING)
            .select_related("run__node").only("run_id", "taken_at", "run__node__address",
                                               "run__node__observed_address"))
    out = []
    for slot in held:
        user, password = credential(server, slot.run_id, slot.taken_at)
        out.append({"username": user, "hash": user_hash(user, password),
                    "addresses": sorted(slot.run.node.known_addresses())})
    return out
