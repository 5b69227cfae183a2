"""Starting and stopping the real processes a test or the demo needs."""

from __future__ import annotations

import functools
import os
import shlex
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path

import redis

from benchmarks.runner import die_with_parent

REPO = Path(__file__).resolve().parents[1]


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def node_ports() -> int:
    """A node's iperf3 port with the two after it free: its test server and the one-off
    iperf3 of a buyer's probe (contract.site_probe.gate_port, probe_iperf3_port). A node
    on free_port() alone may find its test server's port taken by another's iperf3."""
    for _ in range(50):
        base = free_port()
        try:
            for port in (base, base + 1, base + 2):
                with socket.socket() as s:
                    s.bind(("127.0.0.1", port))
            return base
        except OSError:
            continue
    raise RuntimeError("no three free ports in a row")


def wait_for(check: Callable[[], bool], timeout: float, what: str, interval: float = 0.1) -> float:
    """Poll ``check`` until it is true; returns the seconds it took."""
    start = time.monotonic()
    while time.monotonic() - start < timeout:
        if check():
            return time.monotonic() - start
        time.sleep(interval)
    raise TimeoutError(f"timed out after {timeout:g} s waiting for {what}")


@dataclass
class Proc:
    name: str
    popen: subprocess.Popen[bytes]
    log_path: Path

    def alive(self) -> bool:
        return self.popen.poll() is None

    def kill(self, sig: int = signal.SIGKILL) -> None:
        try:
            os.killpg(self.popen.pid, sig)
        except ProcessLookupError:
            pass

    def stop(self, timeout: float = 10) -> None:
        stop_all([self], timeout)

    def log(self) -> str:
        return self.log_path.read_text(errors="replace") if self.log_path.exists() else ""


def stop_all(procs: Sequence[Proc], timeout: float = 10) -> None:
    """Stop several processes at once: all are asked (SIGTERM) before any is waited for, and
    what is left after ``timeout`` is killed with its group.

    One after the other, each Celery worker's warm shutdown was waited out in turn: the load
    test's twenty workers took 75 s to stop, a lab of four nodes 15-20 s."""
    for proc in procs:
        if proc.alive():
            proc.kill(signal.SIGTERM)
    deadline = time.monotonic() + timeout
    for proc in procs:
        try:
            proc.popen.wait(max(0.0, deadline - time.monotonic()))
        except subprocess.TimeoutExpired:
            pass
        proc.kill(signal.SIGKILL)  # and anything left in its group
        proc.popen.wait()


def start(name: str, argv: Sequence[str], log_dir: Path, env: dict[str, str] | None = None,
          cwd: Path = REPO) -> Proc:
    """Start ``argv`` in a process group of its own (stop_all kills the group), killed when
    the process that started it dies, even by kill -9: a killed test run, demo or
    `benchctl lab up` leaves no server behind. (`ip netns exec` and `nice` exec their
    command, which keeps the signal; a restart loop gives it on with restart_loop.)"""
    log_dir.mkdir(parents=True, exist_ok=True)
    log_path = log_dir / f"{name}.log"
    with open(log_path, "ab") as log:
        popen = subprocess.Popen(list(argv), stdout=log, stderr=subprocess.STDOUT, cwd=cwd,
                                 env={**os.environ, **(env or {})}, start_new_session=True,
                                 preexec_fn=die_with_parent)  # noqa: PLW1509
    return Proc(name, popen, log_path)


def restart_loop(argv: Sequence[str]) -> list[str]:
    """``argv`` run again whenever it exits, as a service manager would. Each run is killed
    with the loop (setpriv's parent-death signal): killing the shell alone left iperf3 up."""
    command = " ".join(shlex.quote(a) for a in argv)
    return ["sh", "-c", f"while :; do setpriv --pdeathsig KILL {command}; sleep 0.2; done"]


@dataclass
class PrivateRedis:
    """A redis-server on its own port with a password, an ACL file, and noeviction."""

    proc: Proc
    port: int
    password: str
    aclfile: Path

    @property
    def admin_url(self) -> str:
        return f"redis://default:{self.password}@127.0.0.1:{self.port}/0"

    def client(self) -> redis.Redis:
        return redis.Redis.from_url(self.admin_url)

    def restart(self) -> None:
        """Stop and start again on the same port; no persistence, so queues are lost."""
        self.proc.stop()
        self.proc = _start_redis_proc(self.port, self.aclfile, self.proc.log_path.parent)
        wait_for(self._up, 10, "redis to come back")

    def _up(self) -> bool:
        try:
            return bool(self.client().ping())
        except redis.RedisError:
            return False


def _start_redis_proc(port: int, aclfile: Path, log_dir: Path) -> Proc:
    return start(f"redis-{port}", [
        "redis-server", "--port", str(port), "--bind", "127.0.0.1", "--save", "",
        "--appendonly", "no", "--aclfile", str(aclfile), "--maxmemory", "256mb",
        "--maxmemory-policy", "noeviction", "--dir", str(aclfile.parent),
    ], log_dir)


def start_private_redis(work_dir: Path, password: str) -> PrivateRedis:
    work_dir.mkdir(parents=True, exist_ok=True)
    aclfile = work_dir / "users.acl"
    # The default user needs the password: without it any node could skip its own ACL.
    aclfile.write_text(f"user default on >{password} ~* &* +@all\n")
    port = free_port()
    instance = PrivateRedis(_start_redis_proc(port, aclfile, work_dir), port, password, aclfile)
    wait_for(instance._up, 10, "private redis-server")
    return instance


def start_iperf3_server(port: int, log_dir: Path, bind: str = "127.0.0.1",
                        netns: str | None = None, report_log: Path | None = None,
                        extra: Sequence[str] = ()) -> Proc:
    argv = ["iperf3", "-s", "-p", str(port), "-B", bind, *extra]
    if report_log is not None:
        # With -J, iperf3 3.12's server exits when a test ends in error (a killed client):
        # keep it running, as a reference endpoint's service manager would.
        argv = restart_loop([*argv, "-J", "--logfile", str(report_log)])
    if netns:
        argv = ["ip", "netns", "exec", netns, *argv]
    proc = start(f"iperf3-{bind}-{port}", argv, log_dir)
    if netns is None:
        wait_for(lambda: port_open(bind, port), 10, "iperf3 server")
    return proc


# Above the lab's relays (lab.relay.realtime, SCHED_FIFO 10): the demo's relays carry its
# links' iperf3 and gradient traffic at real-time priority, and while they did, a nice -10
# echo server and its answering child woke so late that an honest loopback RTT read 14 ms
# against the 5 ms criterion (test_certification beside the demo, stop 49).
ECHO_REALTIME_PRIORITY = 20


@functools.cache
def realtime_allowed() -> bool:
    """Whether this process may start children at real-time priority (root with
    CAP_SYS_NICE; a container's root may lack it)."""
    if os.geteuid() != 0 or shutil.which("chrt") is None:
        return False
    return subprocess.run(["chrt", "-f", str(ECHO_REALTIME_PRIORITY), "true"],
                          capture_output=True, check=False).returncode == 0


def echo_priority(argv: list[str]) -> list[str]:
    """``argv`` at the priority of a reference's round trips: real-time where allowed, else
    raised (root), else as it is. A reference endpoint is a machine of its own; here it
    shares a busy one, and the round trips it times are its evidence."""
    if realtime_allowed():
        return ["chrt", "-f", str(ECHO_REALTIME_PRIORITY), *argv]
    return ["nice", "-n", "-10", *argv] if os.geteuid() == 0 else argv


def start_echo_server(port: int, log_dir: Path, bind: str = "127.0.0.1",
                      record_log: Path | None = None) -> Proc:
    argv = echo_priority([sys.executable, "-m", "workers.cli", "echo-server", "--bind", bind,
                          "--port", str(port)])
    if record_log is not None:
        argv += ["--log", str(record_log)]
    proc = start(f"echo-{bind}-{port}", argv, log_dir, env={"PYTHONPATH": str(REPO)})
    wait_for(lambda: port_open(bind, port), 10, "TCP echo server")
    return proc


def answer_echo_argv(host: str, port: int, count: int, token: str,
                     raised: bool = True) -> list[str]:
    """A child that answers a reference echo server's ``count`` round trips under ``token``
    (benchmarks.probes.network.tcp_echo_rtts) and prints what the server timed, as JSON.

    ``raised``: at the echo server's own priority (start_echo_server, echo_priority): the
    server times each round trip to this side's echo, so a late wake-up here is a longer
    figure. Answered from a busy test process, an honest loopback path read 10.1 ms against
    the published 5 ms criterion (CI, #31). Run it in a lab host's namespace with exec_argv."""
    code = ("import json, sys; from benchmarks.probes.network import tcp_echo_rtts; "
            "print(json.dumps(tcp_echo_rtts(sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), "
            "token=sys.argv[4])))")
    argv = ["env", f"PYTHONPATH={REPO}", sys.executable, "-c", code, host, str(port),
            str(count), token]
    return echo_priority(argv) if raised else argv


def reference_agent_argv(api_url: str, key_file: Path, iperf3_log: Path,
                         echo_log: Path | None, iperf3_auth: Path | None = None,
                         iperf3_port: int = 5201) -> list[str]:
    """`benchctl reference-agent`: hands the reference's records in over the API (how far
    it has, kept beside its key); with ``iperf3_auth``, keeps its iperf3 server's users file
    at the granted turns."""
    return [sys.executable, "-m", "workers.cli", "reference-agent", "--url", api_url,
            "--key-file", str(key_file), "--state", str(key_file.with_suffix(".handed-in")),
            "--iperf3-log", str(iperf3_log),
            *(["--echo-log", str(echo_log)] if echo_log else []),
            *(["--iperf3-auth", str(iperf3_auth), "--iperf3-port", str(iperf3_port)]
              if iperf3_auth else []), "--interval", "0.2"]



def start_reference_agent(api_url: str, key_file: Path, iperf3_log: Path,
                          echo_log: Path | None, log_dir: Path) -> Proc:
    return start(f"reference-agent-{key_file.stem}",
                 reference_agent_argv(api_url, key_file, iperf3_log, echo_log), log_dir,
                 env={"PYTHONPATH": str(REPO)})


def port_open(host: str, port: int) -> bool:
    try:
        with socket.create_connection((host, port), timeout=0.5):
            return True
    except OSError:
        return False


# A node worker as the tests and the lab run it: its log unbuffered (readiness is read from
# it), a short idle BRPOP, so that stopping it takes a second (redis_transport), and one
# torch thread per training rank, since its "host" shares this machine's cores with the
# others (benchmarks/probes/training_ddp.rank_main).
NODE_WORKER_ENV = {"PYTHONUNBUFFERED": "1", "PYTHONPATH": str(REPO), "BENCH_BRPOP_TIMEOUT": "1",
                   "BENCH_TORCH_THREADS": "1"}


def node_worker_argv(config_path: Path) -> list[str]:
    return [sys.executable, "-m", "workers.cli", "--config", str(config_path), "worker",
            "--loglevel", "INFO"]


def start_node_worker(config_path: Path, log_dir: Path, name: str) -> Proc:
    return start(name, node_worker_argv(config_path), log_dir, env=NODE_WORKER_ENV)


def wait_worker_ready(proc: Proc, timeout: float = 30) -> None:
    def ready() -> bool:
        if not proc.alive():
            raise RuntimeError(f"{proc.name} exited:\n{proc.log()[-3000:]}")
        return " ready." in proc.log()

    wait_for(ready, timeout, f"{proc.name} to be ready")


def _pg_bin(tool: str) -> str:
    """A PostgreSQL server program: on PATH, else Debian's versioned directory."""
    found = shutil.which(tool) or next(
        (str(p) for p in sorted(Path("/usr/lib/postgresql").glob(f"*/bin/{tool}"), reverse=True)),
        None)
    if found is None:
        raise SystemExit(f"PostgreSQL's {tool} is not installed: run `make tools` as root "
                         "(it installs the postgresql package), or set DATABASE_URL")
    return found


def _as_server_user() -> list[str]:
    # initdb and postgres refuse to run as root: as root they run as the postgres user.
    return ["runuser", "-u", "postgres", "--"] if os.geteuid() == 0 else []


@dataclass
class PrivatePostgres:
    """A throwaway PostgreSQL cluster of our own: for a test that stops and starts it, and
    for the demo and the lab on a machine where none answers on 127.0.0.1."""

    data_dir: Path
    port: int

    @property
    def url(self) -> str:
        return f"postgres://postgres@127.0.0.1:{self.port}/postgres"

    def _ctl(self, *args: str) -> None:
        subprocess.run([*_as_server_user(), _pg_bin("pg_ctl"), "-D", str(self.data_dir), "-w",
                        *args], check=True, capture_output=True)

    def start(self) -> None:
        self._ctl("-o", f"-p {self.port} -k {self.data_dir} -c listen_addresses=127.0.0.1",
                  "-l", str(self.data_dir / "server.log"), "start")

    def stop(self) -> None:
        self._ctl("-m", "fast", "stop")

    def remove(self) -> None:
        subprocess.run([*_as_server_user(), _pg_bin("pg_ctl"), "-D", str(self.data_dir), "-m",
                        "immediate", "stop"], capture_output=True, check=False)
        shutil.rmtree(self.data_dir.parent, ignore_errors=True)


def start_private_postgres() -> PrivatePostgres:
    """initdb (as the postgres user when root) and start on a free port.

    The cluster lives in its own folder under /tmp, which the postgres user can reach
    (pytest's folders and var/ may be root's alone); remove() deletes it.
    """
    work_dir = Path(tempfile.mkdtemp(prefix="bench-pg-"))
    if os.geteuid() == 0:
        shutil.chown(work_dir, "postgres", "postgres")
    data_dir = work_dir / "pgdata"
    subprocess.run([*_as_server_user(), _pg_bin("initdb"), "-D", str(data_dir), "-A", "trust",
                    "-U", "postgres"], check=True, capture_output=True)
    instance = PrivatePostgres(data_dir, free_port())
    instance.start()
    return instance
