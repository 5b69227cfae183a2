"""A user-space TCP relay for the lab: forwards connections, optionally adding latency.

netem is not available on these kernels, so added latency is emulated here: every chunk is
held for half the delay in each direction, so a round trip through the relay takes
``delay`` longer. What it can and cannot emulate:

* TCP round trips through it (echo RTT, request/response) see the added latency.
* It terminates TCP: a bulk transfer through it sees the delay once, but the sender's
  congestion window and the bandwidth-delay product are those of the local hops, so it
  does not reproduce how TCP throughput suffers on a long fat link.
* ICMP (ping, tracepath) does not go through it and keeps the raw link's RTT.

It also joins namespaces to the platform without routing: a listener inside a lab host's
namespace can forward to a unix socket that a root-namespace server listens on.

    python -m lab.relay --map 10.213.0.9:17001=127.0.0.1:7007 --delay-ms 8
    python -m lab.relay --map 127.0.0.1:8000=unix:/run/lab/api.sock
"""

from __future__ import annotations

import argparse
import collections
import os
import socket
import struct
import sys
import threading
import time
from dataclasses import dataclass

CHUNK = 256 * 1024
SPIN = 0.0005  # seconds of busy-waiting before a chunk is due: sleeps overshoot a little
# The relay's own cost of a round trip is about 0.1 ms here (kernel-stamped arrivals); a
# calibration above this measured the machine's load, not the relay.
MAX_OVERHEAD = 0.001


@dataclass(frozen=True)
class Address:
    host: str = ""
    port: int = 0
    path: str = ""  # a unix socket

    @classmethod
    def parse(cls, text: str) -> Address:
        if text.startswith("unix:"):
            return cls(path=text[5:])
        host, _, port = text.rpartition(":")
        return cls(host=host.strip("[]"), port=int(port))

    def connect(self) -> socket.socket:
        if self.path:
            sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
            sock.connect(self.path)
            return sock
        sock = socket.create_connection((self.host, self.port))
        sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        return sock

    def listen(self) -> socket.socket:
        if self.path:
            if os.path.exists(self.path):
                os.unlink(self.path)
            sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
            sock.bind(self.path)
        else:
            sock = socket.socket(socket.AF_INET6 if ":" in self.host else socket.AF_INET,
                                 socket.SOCK_STREAM)
            sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
            sock.bind((self.host, self.port))
        sock.listen(128)
        return sock


def copy(src: socket.socket, dst: socket.socket) -> None:
    try:
        while data := src.recv(CHUNK):
            dst.sendall(data)
    except OSError:
        pass
    finally:
        _shut(dst)


def delayed_copy(src: socket.socket, dst: socket.socket, delay: float) -> None:
    """Copy one direction, each chunk sent ``delay`` seconds after it arrived.

    A reader and a writer thread, so chunks keep arriving while earlier ones wait: the
    latency is fixed, not added up chunk after chunk."""
    pending: collections.deque[tuple[float, bytes]] = collections.deque()
    ready = threading.Condition()
    stamped = kernel_timestamps(src)

    def write() -> None:
        try:
            while True:
                with ready:
                    while not pending:
                        ready.wait()
                    due, data = pending.popleft()
                if not data:
                    break
                wait = due - time.monotonic()
                if wait > SPIN:
                    time.sleep(wait - SPIN)
                while time.monotonic() < due:
                    pass
                dst.sendall(data)
        except OSError:
            pass
        finally:
            _shut(dst)

    writer = threading.Thread(target=write, daemon=True)
    writer.start()
    try:
        while True:
            data, arrived = recv_stamped(src) if stamped else (src.recv(CHUNK), time.monotonic())
            with ready:
                pending.append((arrived + delay, data))
                ready.notify()
            if not data:
                break
    except OSError:
        with ready:
            pending.append((0.0, b""))
            ready.notify()
    writer.join()


# Linux's SO_TIMESTAMPNS (and SCM_TIMESTAMPNS): the kernel's arrival time of received data,
# a struct timespec of CLOCK_REALTIME. Python's socket module does not name it.
SO_TIMESTAMPNS = 35
TIMESPEC = struct.Struct("@qq")


def kernel_timestamps(sock: socket.socket) -> bool:
    """Ask the kernel to stamp what ``sock`` receives; False where it cannot (not Linux, a
    unix socket), and the relay then counts from when its reader woke."""
    if sys.platform != "linux" or sock.family == socket.AF_UNIX:
        return False
    try:
        sock.setsockopt(socket.SOL_SOCKET, SO_TIMESTAMPNS, 1)
    except OSError:
        return False
    return True


def recv_stamped(sock: socket.socket) -> tuple[bytes, float]:
    """A chunk and when its last packet reached this host, on the monotonic clock.

    The delay counts from the kernel's arrival, not from when the reader thread woke: a
    wake-up late by a few hundred microseconds on a busy host is then not added to the
    round trip."""
    data, ancillary, _, _ = sock.recvmsg(CHUNK, socket.CMSG_SPACE(TIMESPEC.size))
    now_mono, now_real = time.monotonic(), time.time()
    for level, kind, payload in ancillary:
        if level == socket.SOL_SOCKET and kind == SO_TIMESTAMPNS and len(payload) >= TIMESPEC.size:
            sec, nsec = TIMESPEC.unpack_from(payload)
            return data, now_mono - max(0.0, now_real - (sec + nsec / 1e9))
    return data, now_mono


def _shut(sock: socket.socket) -> None:
    try:
        sock.shutdown(socket.SHUT_WR)
    except OSError:
        pass


def serve_connection(client: socket.socket, target: Address, delay_s: float) -> None:
    try:
        upstream = target.connect()
    except OSError:
        client.close()
        return
    if client.family != socket.AF_UNIX:
        client.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
    half = delay_s / 2
    directions = [(client, upstream), (upstream, client)]
    threads = [threading.Thread(target=delayed_copy if half else copy,
                                args=(a, b, half) if half else (a, b), daemon=True)
               for a, b in directions]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    client.close()
    upstream.close()


def accept_loop(listener: socket.socket, target: Address, delay_s: float) -> None:
    while True:
        client, _ = listener.accept()
        threading.Thread(target=serve_connection, args=(client, target, delay_s),
                         daemon=True).start()


def forwarding_overhead(delay: float, rounds: int = 30) -> float:
    """Seconds a round trip through this relay costs beyond the direct path and ``delay``.

    Measured here, at start, with the relay's own machinery and the configured delay: a
    loopback echo reached directly, then through a delayed_copy pair. Thread wake-ups cost
    more after a long idle sleep (the virtual CPU halts), so it is measured at the real
    delay. The relay subtracts it, so a round trip through it takes the configured delay.

    Each path's fastest round trip is compared, not its median: a busy machine only adds to
    a round trip, and a relay started while a lab's other processes were starting measured
    a median overhead of 4.6 ms once (CI), took it off a 5 ms delay and delivered 0.4 ms.
    What is left above MAX_OVERHEAD is a busy start, not the relay, and is not subtracted."""
    echo = socket.socket()
    echo.bind(("127.0.0.1", 0))
    echo.listen(4)
    port = echo.getsockname()[1]

    def serve_echo() -> None:
        while True:
            conn, _ = echo.accept()
            conn.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
            threading.Thread(target=copy, args=(conn, conn), daemon=True).start()

    threading.Thread(target=serve_echo, daemon=True).start()

    def rtt(sock: socket.socket) -> float:
        samples = []
        for _ in range(rounds):
            start = time.monotonic()
            sock.sendall(b"x")
            sock.recv(1)
            samples.append(time.monotonic() - start)
        return min(samples)

    direct = Address("127.0.0.1", port).connect()
    front = socket.socket()
    front.bind(("127.0.0.1", 0))
    front.listen(1)
    threading.Thread(target=lambda: serve_connection(front.accept()[0], Address("127.0.0.1", port),
                                                     delay), daemon=True).start()
    relayed = Address("127.0.0.1", front.getsockname()[1]).connect()
    overhead = max(0.0, rtt(relayed) - rtt(direct) - delay)
    for sock in (direct, relayed, front, echo):
        sock.close()
    return min(overhead, MAX_OVERHEAD)


def realtime() -> None:
    """Wake on time on a busy machine: real-time scheduling where allowed (root).

    The relay sleeps almost all the time and spins at most SPIN per chunk, so it cannot
    starve the machine; without this, a loaded two-core host adds half a millisecond."""
    try:
        os.sched_setscheduler(0, os.SCHED_FIFO, os.sched_param(10))
    except (PermissionError, AttributeError, OSError):
        pass


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--map", action="append", required=True, metavar="LISTEN=TARGET")
    parser.add_argument("--delay-ms", type=float, default=0.0, help="added round-trip latency")
    args = parser.parse_args()
    delay = args.delay_ms / 1000.0
    if delay:
        realtime()
        # A thread waking for a chunk must not wait out another's 5 ms GIL slice.
        sys.setswitchinterval(0.0001)
        overhead = forwarding_overhead(delay)
        print(f"forwarding overhead {overhead * 1000:.3f} ms, subtracted from the delay", flush=True)
        delay = max(1e-9, delay - overhead)
    loops = []
    for mapping in args.map:
        listen, _, target = mapping.partition("=")
        listener = Address.parse(listen).listen()
        loops.append(threading.Thread(target=accept_loop, daemon=True, args=(
            listener, Address.parse(target), delay)))
    for loop in loops:
        loop.start()
    print("relay ready", flush=True)
    for loop in loops:
        loop.join()


if __name__ == "__main__":
    main()
