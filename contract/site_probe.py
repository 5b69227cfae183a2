"""A buyer's probe from their own site to a node's test server: the protocol both ends speak,
the limits (contract/data/site_probe.yaml), and the pure functions that time it.

The node's test server (workers/host/probe_gate.py) listens on the port after the node's
iperf3 port. A session, one line each way at a time:

    buyer: PROBE <token> <count>
    node:  BUSY <seconds>  |  REFUSED <why>  |  (the RTT test:)
    node:  N <n_1> -                 buyer: <n_1> <c_1>
    node:  N <n_2> <c_1>             buyer: <n_2> <c_2>      ... count + 1 times
    node:  RTTS [<the node's own timings>]
    buyer: IPERF3                    node:  READY <port>     (a one-off, authenticated iperf3 -s)
    ...                              node:  SERVED            (its log read, the test over)
    buyer: DONE                      node:  BYE               (its record handed to the platform)

A node of the same job times its TCP round trips to this one (network.internode_rtt) on
the same server, with no token: an echo carries nothing but the bytes it was sent.

    peer:  ECHO <count>              node:  OK
    peer:  x                         node:  x                ... count + 1 times, then closed

Who times what. The node sends nonce n_k and times until the buyer's echo of it: its claim.
The buyer times from its echo of n_{k-1} to the arrival of n_k: one full round trip, and the
figure stored. The node's message k must carry c_{k-1}, the buyer's fresh random challenge,
so it cannot be sent before the buyer's answer arrived: a host can delay a round trip, never
shorten it. The node's record confirms the test reached the enrolled node.
"""

from __future__ import annotations

import secrets
from dataclasses import dataclass
from pathlib import Path

from contract import rules

BOUNDS = {name: b.value for name, b in
          rules.load_bounds(Path(__file__).resolve().parent / "data" / "site_probe.yaml").items()}

PROBE, BUSY, REFUSED, NONCE, RTTS = "PROBE", "BUSY", "REFUSED", "N", "RTTS"
IPERF3, READY, SERVED, DONE, BYE = "IPERF3", "READY", "SERVED", "DONE", "BYE"
ECHO, OK = "ECHO", "OK"
NO_CHALLENGE = "-"
MAX_LINE = 4096
HEX_BYTES = 8  # nonces and challenges: 16 hex digits


def gate_port(iperf3_port: int) -> int:
    """Where a node's test server listens: the port after its node-to-node iperf3 server."""
    return iperf3_port + 1


def probe_iperf3_port(iperf3_port: int) -> int:
    """Where its one-off, authenticated iperf3 server listens during a session."""
    return iperf3_port + 2


def iperf3_username(probe_id: int) -> str:
    return f"probe{probe_id}"


def fresh() -> str:
    return secrets.token_hex(HEX_BYTES)


def bounded_count(count: int) -> int:
    return max(1, min(int(count), int(BOUNDS["max_round_trips"])))


def bounded_seconds(seconds: int) -> int:
    return max(1, min(int(seconds), int(BOUNDS["max_iperf3_seconds"])))


class ProtocolError(ValueError):
    """A line that is not what this step of the session expects."""


@dataclass(frozen=True)
class NodeNonce:
    nonce: str
    challenge: str  # the buyer's challenge it answers ("-" for the first)


def nonce_line(nonce: str, challenge: str) -> str:
    return f"{NONCE} {nonce} {challenge}\n"


def parse_nonce_line(line: str) -> NodeNonce:
    words = line.split()
    if len(words) != 3 or words[0] != NONCE or not _hex(words[1]) \
            or not (words[2] == NO_CHALLENGE or _hex(words[2])):
        raise ProtocolError(f"not a nonce line: {line[:80]!r}")
    return NodeNonce(words[1], words[2])


def answer_line(nonce: str, challenge: str) -> str:
    return f"{nonce} {challenge}\n"


def parse_answer_line(line: str) -> tuple[str, str]:
    words = line.split()
    if len(words) != 2 or not _hex(words[0]) or not _hex(words[1]):
        raise ProtocolError(f"not an answer line: {line[:80]!r}")
    return words[0], words[1]


def _hex(word: str) -> bool:
    return len(word) == 2 * HEX_BYTES and all(c in "0123456789abcdef" for c in word)


def buyer_round_trips(answered_at: list[float], arrived_at: list[float]) -> list[float]:
    """The buyer's round trips (ms): from its answer k to the node's next nonce (k + 1),
    which carried that answer's challenge. ``answered_at[k]`` and ``arrived_at[k]`` are
    perf_counter seconds; the node's first nonce (no answer before it) is not a round trip."""
    return [round((arrived_at[k + 1] - answered_at[k]) * 1000.0, 4)
            for k in range(min(len(answered_at), len(arrived_at) - 1))]
