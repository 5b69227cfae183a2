"""The TCP round trip from where it runs (a lab host's namespace) to an echo server.

    ip netns exec bl-demo-buyer-hz python -m lab.rtt 10.213.0.3 7007 --count 20 [--raw]

Prints the median of ``--count`` one-byte round trips, in ms (``--fastest``: the fastest of
them, which a busy machine cannot lengthen: it only adds to a round trip). ``--raw`` marks the
connection with the detour relay's BYPASS_MARK, so the geography's nft rules let it pass:
the lab's raw path, which a city pair's round trip is added to. A figure through the
geography is compared with raw + the pair's figure, not with the figure alone: the raw path
holds both ends' processing, 0.1-0.8 ms on a busy two-core machine (LabStack.base_rtt).
"""

from __future__ import annotations

import argparse
import socket
import statistics
import time

from lab.relay import BYPASS_MARK


def connect(host: str, port: int, raw: bool, wait_s: float, greeting: str = "") -> socket.socket:
    """Connected and echoing, retrying while the server is not listening yet (it starts
    beside us). Through a detour relay a refusal shows as a connection that closes at
    once (the relay accepted it), so the first echo is part of the check. A ``greeting``
    line opens the echo first (a node's test server: ECHO <count>, answered OK)."""
    deadline = time.monotonic() + wait_s
    while True:
        sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        if raw:
            sock.setsockopt(socket.SOL_SOCKET, socket.SO_MARK, BYPASS_MARK)
        try:
            sock.connect((host, port))
            sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
            if greeting:
                sock.sendall(f"{greeting}\n".encode())
                if sock.recv(3) != b"OK\n":
                    raise OSError("the echo was not opened")
            sock.sendall(b"x")  # the first round trip also pays for the accept: not timed
            if sock.recv(1) == b"x":
                return sock
        except OSError:
            pass
        sock.close()
        if time.monotonic() > deadline:
            raise SystemExit(f"no TCP echo from {host}:{port} within {wait_s:g} s")
        time.sleep(0.1)


def echo_rtts(sock: socket.socket, count: int) -> list[float]:
    rtts = []
    for _ in range(count):
        start = time.perf_counter()
        sock.sendall(b"x")
        if sock.recv(1) != b"x":
            raise SystemExit("the echo server answered something else")
        rtts.append((time.perf_counter() - start) * 1000.0)
    return rtts


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("host")
    parser.add_argument("port", type=int)
    parser.add_argument("--count", type=int, default=20)
    parser.add_argument("--raw", action="store_true", help="past the geography's relays")
    parser.add_argument("--fastest", action="store_true", help="the fastest, not the median")
    parser.add_argument("--greeting", default="", help="a line that opens the echo")
    parser.add_argument("--wait", type=float, default=10.0,
                        help="seconds to wait for the server to listen")
    args = parser.parse_args()
    with connect(args.host, args.port, args.raw, args.wait, args.greeting) as sock:
        rtts = echo_rtts(sock, args.count)
    print(f"{min(rtts) if args.fastest else statistics.median(rtts):.4f}")


if __name__ == "__main__":
    main()
