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

A detour listener is transparent: an nft ``redirect`` in the host's namespace sends it the
connections that were going elsewhere (geography.py: to another city's hosts), and it goes
on to where each was going (SO_ORIGINAL_DST) from the same namespace, so the destination
sees the host's own address. Its onward connections carry BYPASS_MARK, which the nft rules
let pass. The client's connection is accepted at once, by the relay: its TCP handshake
does not take the added round trip (its first data does), and a destination that keeps
refusing for REFUSED_RETRY_S shows as a connection accepted and then reset.

    python -m lab.relay --map 10.213.0.9:17001=127.0.0.1:7007 --delay-ms 8
    python -m lab.relay --map 127.0.0.1:8000=unix:/run/lab/api.sock
    python -m lab.relay --detour 127.0.0.1:17302,15.5 --detour 127.0.0.1:17300,2.1
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
# Chunks of one stream: due within this of the last send, they go without spinning, and
# together, up to this early (a stream's latency is its first chunk's, which keeps SPIN).
STREAM_GAP = 0.0005
# The relay's own cost of a round trip is about 0.1 ms here (kernel-stamped arrivals); a
# calibration above this measured the machine's load, not the relay.
MAX_OVERHEAD = 0.001
# What one direction of a delayed connection holds before it stops reading: the sender then
# waits, as on a real path, instead of filling the relay's memory at loopback speed. Enough
# for 1 Gbit/s over a 64 ms round trip (125 MB/s x 32 ms held), the demo's fastest and
# longest inter-city path being 1 Gbit/s over 16 ms.
HOLD_BYTES = 4 * 1024 * 1024
# The socket mark of a detour's onward connections: geography.nft_ruleset lets them pass
# (else they would be redirected back into the relay). Any value no one else uses.
BYPASS_MARK = 0x6765
# How long a detour keeps trying a destination that refuses (connect_onward says why): the
# network probe's iperf3 gives up connecting after 3 s (--connect-timeout 3000).
REFUSED_RETRY_S = 3.0
# Linux's SO_ORIGINAL_DST (netfilter_ipv4.h): where a redirected connection was going, a
# struct sockaddr_in.
SO_ORIGINAL_DST = 80


@dataclass(frozen=True)
class Address:
    host: str = ""
    port: int = 0
    path: str = ""  # a unix socket
    original: bool = False  # a detour's: wherever the redirected connection was going

    @classmethod
    def parse(cls, text: str) -> Address:
        if text.startswith("unix:"):
            return cls(path=text[5:])
        host, _, port = text.rpartition(":")
        return cls(host=host.strip("[]"), port=int(port))

    def connect(self, client: socket.socket | None = None) -> socket.socket:
        if self.original:
            assert client is not None
            return connect_onward(original_destination(client))
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


def original_destination(client: socket.socket) -> tuple[str, int]:
    """The address a redirected connection was opened to (before nft's redirect)."""
    raw = client.getsockopt(socket.SOL_IP, SO_ORIGINAL_DST, 16)
    port, packed = struct.unpack_from("!2xH4s", raw)
    return socket.inet_ntoa(packed), port


def connect_onward(destination: tuple[str, int], mark: int = BYPASS_MARK) -> socket.socket:
    """A detour's connection on to where its client was going, marked to pass the nft rules.

    A refusal is tried again for up to REFUSED_RETRY_S: the client's own connection is
    already accepted (by the relay), so it cannot see the refusal and try again itself, as
    it would on a direct path. iperf3's server stops listening for a moment between two
    tests (it listens anew for each), and a node's test right after its previous one was
    refused there: directly, iperf3 says "Connection refused" and the probe tries again;
    through a relay that reset it, "Connection reset by peer", and the run failed."""
    deadline = time.monotonic() + REFUSED_RETRY_S
    while True:
        sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        if mark:  # (setting a mark needs CAP_NET_ADMIN)
            sock.setsockopt(socket.SOL_SOCKET, socket.SO_MARK, mark)
        try:
            sock.connect(destination)
        except ConnectionRefusedError:
            sock.close()
            if time.monotonic() >= deadline:
                raise
            time.sleep(0.01)
            continue
        except OSError:
            sock.close()
            raise
        sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
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
    latency is fixed, not added up chunk after chunk. The reader holds at most HOLD_BYTES
    not yet sent; past that it waits, and TCP slows the sender down."""
    pending: collections.deque[tuple[float, bytes]] = collections.deque()
    ready = threading.Condition()
    stamped = kernel_timestamps(src)
    held = 0

    def write() -> None:
        nonlocal held
        last_sent = 0.0
        try:
            while True:
                with ready:
                    while not pending:
                        ready.wait()
                    due, data = pending[0]
                if not data:
                    break
                # A chunk due soon after the last one sent is the middle of a stream: it
                # sleeps without spinning and goes with what is due in the next STREAM_GAP,
                # one send for many chunks (one spin per chunk took a core at 1 Gbit/s).
                # A chunk after a pause (a round trip's) keeps its time to the SPIN.
                streaming = due - last_sent < STREAM_GAP
                wait = due - time.monotonic()
                if streaming and wait > 0:
                    time.sleep(wait)
                elif wait > SPIN:
                    time.sleep(wait - SPIN)
                while not streaming and time.monotonic() < due:
                    pass
                horizon = time.monotonic() + (STREAM_GAP if streaming else 0.0)
                batch = []
                with ready:
                    while pending and pending[0][1] and pending[0][0] <= max(due, horizon):
                        batch.append(pending.popleft()[1])
                data = b"".join(batch)
                dst.sendall(data)
                last_sent = time.monotonic()
                with ready:
                    held -= len(data)
                    ready.notify_all()
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
                while held >= HOLD_BYTES and writer.is_alive():
                    ready.wait(0.1)
                if not writer.is_alive():
                    break  # its destination is gone: nothing more to hold for it
                pending.append((arrived + delay, data))
                held += len(data)
                ready.notify_all()
            if not data:
                break
    except OSError:
        with ready:
            pending.append((0.0, b""))
            ready.notify_all()
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
        upstream = target.connect(client)
    except OSError:
        # A reset, not an orderly close: the client's nearest answer to a refusal, where
        # the kernel has completed its handshake with the relay already.
        client.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
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


# The relays' real-time priority; a reference's echo runs above it (lab.procs.echo_priority).
REALTIME_PRIORITY = 10


def realtime() -> None:
    """Wake on time on a busy machine: real-time scheduling where allowed (root).

    The relay sleeps almost all the time and spins at most SPIN per chunk, so it cannot
    starve the machine; without this, a loaded two-core host adds half a millisecond."""
    try:
        os.sched_setscheduler(0, os.SCHED_FIFO, os.sched_param(REALTIME_PRIORITY))
    except (PermissionError, AttributeError, OSError):
        pass


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--map", action="append", default=[], metavar="LISTEN=TARGET")
    parser.add_argument("--delay-ms", type=float, default=0.0,
                        help="added round-trip latency of the --map listeners")
    parser.add_argument("--detour", action="append", default=[], metavar="LISTEN,DELAY_MS",
                        help="a transparent listener (nft redirect) and its added round trip")
    args = parser.parse_args()
    if not args.map and not args.detour:
        parser.error("give at least one --map or --detour")
    routes = [(listen, Address.parse(target), args.delay_ms / 1000.0)
              for listen, _, target in (m.partition("=") for m in args.map)]
    routes += [(listen, Address(original=True), float(delay_ms) / 1000.0)
               for listen, _, delay_ms in (d.rpartition(",") for d in args.detour)]
    delays = {delay for _, _, delay in routes if delay}
    if delays:
        realtime()
        # A thread waking for a chunk must not wait out another's 5 ms GIL slice.
        sys.setswitchinterval(0.0001)
    # Each delay calibrated at itself (forwarding_overhead says why), then subtracted.
    net = {}
    for delay in sorted(delays):
        overhead = forwarding_overhead(delay)
        print(f"forwarding overhead {overhead * 1000:.3f} ms at {delay * 1000:g} ms, subtracted "
              "from the delay", flush=True)
        net[delay] = max(1e-9, delay - overhead)
    loops = []
    for listen, target, delay in routes:
        listener = Address.parse(listen).listen()
        loops.append(threading.Thread(target=accept_loop, daemon=True, args=(
            listener, target, net.get(delay, 0.0))))
    for loop in loops:
        loop.start()
    print("relay ready", flush=True)
    for loop in loops:
        loop.join()


if __name__ == "__main__":
    main()
