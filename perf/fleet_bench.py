"""`make bench`'s fleet section: the standing load of N enrolled hosts on one deployment.

The fleet grows to each N in turn (simulated hosts, perf/fleet.py, a process per
HOSTS_PER_PROCESS of them); at each N, with the fleet idle for a window of two heartbeat
periods: the web tier's and the sweeper's CPU, each broker's CPU, memory and connections,
and the heartbeats' p99 as the hosts timed them; then one sweeper pass, timed, and 1,000
no-op runs spread over the fleet, timed from the first submission to the last result; and
the re-test scheduler's planning over the fleet (the first tick's and the next one's).
"""

from __future__ import annotations

import json
import os
import random
import subprocess
import sys
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import requests

from contract.sample import percentile
from lab import procs
from lab.platform_stack import REPO, PlatformStack, say
from perf.profile import Profile

HOSTS_PER_PROCESS = 1250
# The clock ticks /proc counts CPU time in.
TICKS = os.sysconf("SC_CLK_TCK")


def cpu_by_pid(pids: list[int]) -> dict[int, float]:
    """Each live process's CPU seconds so far (utime + stime)."""
    out = {}
    for pid in pids:
        try:
            fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
        except FileNotFoundError:
            continue
        out[pid] = (int(fields[11]) + int(fields[12])) / TICKS
    return out


def machine_busy() -> float:
    """The whole machine's busy CPU seconds so far, every core (/proc/stat less idle, iowait)."""
    fields = [int(x) for x in Path("/proc/stat").read_text().split("\n", 1)[0].split()[1:]]
    return (sum(fields[:8]) - fields[3] - fields[4]) / TICKS


def children(pid: int) -> list[int]:
    out = subprocess.run(["pgrep", "-P", str(pid)], capture_output=True, text=True,
                         check=False).stdout
    return [int(p) for p in out.split()]


def postgres_pids() -> list[int]:
    """PostgreSQL's processes (the server's and each connection's)."""
    out = subprocess.run(["pgrep", "-x", "postgres"], capture_output=True, text=True,
                         check=False).stdout
    return [int(p) for p in out.split()]


def cores(before: dict[str, Any], after: dict[str, Any]) -> dict[str, Any]:
    """Each part's CPU between two ``FleetBench.cpu_now`` readings, in cores. A process that
    started meanwhile counts from its start; one that ended takes its count with it."""
    seconds = after["at"] - before["at"]
    used: dict[str, Any] = {
        k: sum(v - before[k].get(pid, 0.0) for pid, v in after[k].items()) / seconds
        for k in before if k not in ("at", "machine", "brokers")}
    return used | {"seconds": seconds, "machine": (after["machine"] - before["machine"]) / seconds,
                   "brokers": [(a - b) / seconds
                               for a, b in zip(after["brokers"], before["brokers"], strict=True)]}


def process_tree(platform: PlatformStack, name: str) -> list[int]:
    """A process the platform started (gunicorn, the platform worker) and its children."""
    pid = next(p.popen.pid for p in platform.started if p.name == name)
    return [pid, *children(pid)]


class FleetBench:
    def __init__(self, bench: Any, platform: PlatformStack, window: float) -> None:
        self.bench = bench
        self.platform = platform
        self.report = bench.report
        self.window = window
        self.hosts: list[dict[str, Any]] = []
        self.sims: list[tuple[procs.Proc, Path]] = []
        self.dir = platform.var / "fleet"
        self.dir.mkdir(parents=True, exist_ok=True)
        self.heartbeat = int(platform.env.get("NODE_HEARTBEAT_SECONDS", "30"))

    # --- the fleet ------------------------------------------------------------------------

    def grow(self, total: int) -> None:
        """Enrol and start simulated hosts until ``total`` are connected and waiting."""
        more = total - len(self.hosts)
        if more <= 0:
            return
        out = self.dir / f"hosts-{len(self.hosts)}.json"
        started = time.monotonic()
        done = subprocess.run([sys.executable, "-m", "perf.fleet", "seed", "--count", str(more),
                               "--first", str(len(self.hosts)), "--out", str(out)],
                              cwd=REPO, env=self.platform.env, capture_output=True, text=True,
                              check=False)
        if done.returncode != 0:
            raise RuntimeError(f"enrolling {more} simulated hosts failed:\n{done.stderr[-2000:]}")
        new = json.loads(out.read_text())
        say(f"{more} simulated hosts enrolled in {time.monotonic() - started:.0f} s")
        self.hosts.extend(new)
        config = {"api_url": self.platform.api, "queue": "runs",
                  "heartbeat_seconds": self.heartbeat,
                  "restore_interval": int(self.platform.env.get("NODE_UNACKED_RESTORE_INTERVAL",
                                                                "60")),
                  "mutex_expire": 30, "visibility_timeout": 900, "run_threads": 16}
        started = time.monotonic()
        waiting: list[Path] = []
        for first in range(0, len(new), HOSTS_PER_PROCESS):
            index = len(self.sims)
            spec = self.dir / f"sim-{index}.json"
            spec.write_text(json.dumps({"config": config,
                                        "hosts": new[first:first + HOSTS_PER_PROCESS]}))
            stats = self.dir / f"sim-{index}.stats.json"
            proc = self.platform.keep(procs.start(f"sim-{index}", [
                sys.executable, "-m", "perf.fleet", "run", "--hosts", str(spec),
                "--stats", str(stats)], self.platform.logs, {"PYTHONPATH": str(REPO)}))
            self.sims.append((proc, stats))
            waiting.append(stats.with_suffix(".ready"))
        procs.wait_for(lambda: all(p.exists() for p in waiting), 600,
                       f"{more} simulated hosts to connect")
        say(f"{len(self.hosts)} simulated hosts connected ({time.monotonic() - started:.0f} s)")

    def stop(self) -> None:
        for proc, _ in self.sims:
            proc.stop(timeout=10)

    def stats(self) -> list[dict[str, Any]]:
        """Each simulator's figures since the last call (SIGUSR1 makes it write them)."""
        marks = {path: path.stat().st_mtime_ns if path.exists() else 0 for _, path in self.sims}
        for proc, _ in self.sims:
            proc.popen.send_signal(10)  # SIGUSR1
        procs.wait_for(lambda: all(path.exists() and path.stat().st_mtime_ns != marks[path]
                                   for _, path in self.sims), 60, "the simulators' figures")
        return [json.loads(path.read_text()) for _, path in self.sims]

    # --- what is measured at each N ----------------------------------------------------------

    def measure(self, n: int) -> None:
        platform = self.platform
        self.stats()  # start the heartbeat figures afresh
        before = self.cpu_now()
        time.sleep(self.window)
        used = cores(before, self.cpu_now())
        figures = self.stats()
        beats = sorted(ms for f in figures for ms in f["beats_ms"])
        errors = sum(f["errors"] for f in figures)
        self.report.target(f"fleet {n}: web CPU per 1,000 idle hosts", used["web"] * 1000 / n,
                           "web under 1 core for the idle fleet", "cores",
                           web_cores=f"{used['web']:.3f}",
                           sweeper_and_beat=f"{used['sweeper_and_beat']:.3f} cores",
                           simulators=f"{used['simulators']:.3f} cores",
                           postgres=f"{used['postgres']:.3f} cores",
                           window=f"{used['seconds']:.0f} s")
        self.report.target(f"fleet {n}: heartbeat p99", pct(beats, 99), "< 100 ms", "ms",
                           p50=f"{pct(beats, 50):.2f} ms", beats=len(beats),
                           errors=errors, last_error=next(
                               (f["last_error"] for f in figures if f["last_error"]), ""))
        for i, broker in enumerate(platform.brokers):
            client = broker.client()
            info = client.info()
            name = "default" if i == 0 else f"b{i}"
            held = sum(1 for h in self.hosts if h["broker"] == name)
            self.report.target(
                f"fleet {n}: broker {name}", int(info["connected_clients"]), "-", "connections",
                hosts=held, memory=f"{info['used_memory'] / 2**20:.1f} MB",
                per_host=(f"{(info['used_memory'] - self.baseline_memory[i]) / held:.0f} B"
                          if held else "-"),
                cpu=f"{used['brokers'][i]:.3f} cores",
                maxclients=client.config_get("maxclients")["maxclients"])
        self.sweeper_pass(n, profile=n >= 10_000)
        self.runs(n, 1000)
        self.retest_planning(n)

    def cpu_now(self) -> dict[str, Any]:
        """CPU seconds so far of each part of the deployment, and of the simulated hosts."""
        brokers = [b.client().info("cpu") for b in self.platform.brokers]
        return {"at": time.monotonic(), "machine": machine_busy(),
                "web": cpu_by_pid(process_tree(self.platform, "web")),
                "sweeper_and_beat": cpu_by_pid(process_tree(self.platform, "platform-worker")),
                "simulators": cpu_by_pid([proc.popen.pid for proc, _ in self.sims]),
                "postgres": cpu_by_pid(postgres_pids()),
                "brokers": [float(c["used_cpu_user"]) + float(c["used_cpu_sys"])
                            for c in brokers]}

    def remember_baseline(self) -> None:
        """Each broker's memory before any simulated host: what the hosts add is the rest."""
        self.baseline_memory = [int(b.client().info("memory")["used_memory"])
                                for b in self.platform.brokers]

    def sweeper_pass(self, n: int, profile: bool = False) -> None:
        argv = [sys.executable, "manage.py", "sweep", "--passes", "3"]
        if profile:  # where a pass's time goes, at the largest fleet
            lines = Profile.command(argv, self.platform.env, REPO, f"sweeper-{n}").splitlines()
        else:
            lines = self.platform.manage(*argv[2:]).splitlines()
        passes = [json.loads(line) for line in lines if line.startswith("{")]
        seconds = sorted(p["seconds"] for p in passes)
        self.report.target(f"fleet {n}: sweeper pass", seconds[len(seconds) // 2], "< 2 s at 10,000",
                           "s", worst=f"{seconds[-1]:.3f} s",
                           seen=passes[-1]["seen"])

    def retest_planning(self, n: int) -> None:
        """What beat's re-test tick costs at ``n`` beyond the due re-tests' submissions (those
        are the submission section's): the plan loops over every active host."""
        done = subprocess.run([sys.executable, "-m", "perf.fleet", "plan"], cwd=REPO,
                              env=self.platform.env, capture_output=True, text=True, check=False)
        if done.returncode != 0:
            raise RuntimeError(f"timing the re-test planning failed:\n{done.stderr[-2000:]}")
        plan = json.loads(done.stdout.strip().splitlines()[-1])
        self.report.target(f"fleet {n}: re-test planning", plan["next_s"], "-", "s",
                           next_planned=plan["next_planned"], first=f"{plan['first_s']:.3f} s",
                           first_planned=plan["first_planned"], hosts=plan["nodes"])

    def runs(self, n: int, count: int, per_job: int = 10) -> None:
        """``count`` no-op runs, ``per_job`` random simulated hosts to a job, over the fleet."""
        ids = [h["node_id"] for h in self.hosts]
        rng = random.Random(n)
        before = self.cpu_now()
        started = time.monotonic()
        chosen = [rng.sample(ids, per_job) for _ in range(count // per_job)]
        local = threading.local()

        def submit(nodes: list[int]) -> int:
            if not hasattr(local, "session"):
                local.session = requests.Session()
                local.session.headers.update(self.bench.buyer)
            response = local.session.post(f"{self.platform.api}/api/v1/benchmarks", timeout=60,
                                          json={"nodes": nodes, "suite": "noop"})
            response.raise_for_status()
            return int(str(response.json()["url"]).rstrip("/").rsplit("/", 1)[1])

        with ThreadPoolExecutor(max_workers=4) as pool:
            jobs = list(pool.map(submit, chosen))
        submitted = time.monotonic() - started
        while True:
            row = self.bench.db.execute(
                "SELECT count(*) FILTER (WHERE status = 'succeeded'),"
                " count(*) FILTER (WHERE status IN ('queued', 'running'))"
                " FROM jobs_run WHERE job_id = ANY(%s)", (jobs,)).fetchone()
            if row[1] == 0 or time.monotonic() - started > 600:
                break
            time.sleep(0.2)
        seconds = time.monotonic() - started
        used = cores(before, self.cpu_now())
        # Where this 2-core machine's CPU went meanwhile: the simulated hosts share it.
        self.report.target(f"fleet {n}: {count} no-op runs over the fleet", seconds, "-", "s",
                           succeeded=row[0], submitted_in=f"{submitted:.1f} s",
                           runs_per_s=f"{row[0] / seconds:.1f}",
                           cpu=", ".join(f"{k} {v:.2f}" for k, v in used.items()
                                         if k not in ("seconds", "brokers", "machine"))
                           + f", brokers {sum(used['brokers']):.2f}"
                           + f"; the machine {used['machine']:.2f} of {os.cpu_count()} cores")

    def https_heartbeats(self, hosts: int, seconds: float) -> None:
        """The alternative, for comparison: ``hosts`` hosts beating over HTTPS (the old path,
        still served) at their rate, and the web tier's CPU for it."""
        chosen = self.hosts[:hosts]
        rate = hosts / self.heartbeat
        sessions = [requests.Session() for _ in range(8)]
        latencies: list[float] = []

        def beat(k: int) -> None:
            host = chosen[k % len(chosen)]
            start = time.perf_counter()
            sessions[k % 8].post(f"{self.platform.api}/api/v1/node/heartbeat", timeout=30,
                                 headers={"Authorization": f"Node {host['api_key']}"})
            latencies.append((time.perf_counter() - start) * 1000)

        before = self.cpu_now()
        with ThreadPoolExecutor(max_workers=8) as pool:
            k = 0
            while time.monotonic() - before["at"] < seconds:
                pool.submit(beat, k)
                k += 1
                time.sleep(1 / rate)
        web_cores = cores(before, self.cpu_now())["web"]
        self.report.target("heartbeats over HTTPS instead: web CPU per 1,000 hosts",
                           web_cores * 1000 / hosts, "-", "cores", p99=f"{pct(latencies, 99):.1f} ms",
                           rate=f"{rate:.0f}/s", hosts=hosts)


def pct(values: list[float], q: float) -> float:
    return percentile(sorted(values), q) if values else float("nan")
