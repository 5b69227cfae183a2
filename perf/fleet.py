"""Simulated hosts for `make bench` (fleet): thousands of enrolled nodes on one machine.

A simulated host is not a Celery process (10,000 of those would need 1.5 TB of memory), but
on the wire it is what a node worker is when idle, on the real paths:
  - its own Redis user on its assigned broker, three connections as a worker holds them;
  - BRPOP on its queue's four keys with the worker's timeout (redis_transport.BRPOP_TIMEOUT),
    sent again when it returns empty, as kombu does;
  - kombu's unacked-restore cycle every NODE_UNACKED_RESTORE_INTERVAL (mutex, ZRANGE, release);
  - its heartbeat: SET node:<id>:alive every heartbeat_seconds, timed (heartbeat p99);
  - a run it pops is taken into kombu's unacked set, claimed, run (the no-op probe) and
    reported through the real API by the host code (workers.host.execution.execute_run), and
    acknowledged.

    python -m perf.fleet seed --count N --out hosts.json       (Django settings: the platform's)
    python -m perf.fleet run --hosts hosts.json --shard 0/4 --stats out.json
    python -m perf.fleet plan        (the re-test planning over the enrolled fleet, timed)

`run` writes OUT.ready once every host is connected and waiting, and its figures to OUT on
SIGUSR1 (heartbeat latencies since the last dump, runs done, errors), then starts afresh.
"""

from __future__ import annotations

import argparse
import asyncio
import base64
import concurrent.futures
import hashlib
import json
import os
import random
import resource
import signal
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any
from urllib.parse import unquote, urlsplit

PRIORITY_SEP = "\x06\x16"
# What a host reports about itself with each result; collected once (host work, not the
# platform's, and the same for every simulated host of this machine).
INVENTORY: dict[str, Any] = {}


# --- seeding (runs with the platform's Django settings) -----------------------------------

def seed(count: int, provider_name: str, region_code: str, first: int) -> list[dict[str, Any]]:
    """``count`` nodes enrolled in bulk: rows, API keys and Redis users as enrolment makes
    them, spread over the brokers by the enrolment rule (broker.spread)."""
    import django

    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "config.settings")
    django.setup()
    from django.db import transaction

    from fleet.models import Node, Provider, Region
    from fleet.services import broker, secrets

    provider = Provider.objects.get(name=provider_name)
    region = Region.objects.get(code=region_code)
    keys = [secrets.new_api_key() for _ in range(count)]
    with transaction.atomic():
        nodes = Node.objects.bulk_create([
            Node(provider=provider, region=region, name=f"sim-{first + i:05d}", key_prefix=prefix,
                 key_hash=digest, broker=name, gpu_model="none")
            for i, ((_, prefix, digest), name) in enumerate(zip(keys, broker.spread(count),
                                                               strict=True))])
        passwords = {node.pk: secrets.new_secret() for node in nodes}
        for name in broker.brokers():
            broker.create_node_users({n.pk: passwords[n.pk] for n in nodes if n.broker == name},
                                     name)
        for node in nodes:
            node.broker_user = broker.broker_user_name(node.pk)
        Node.objects.bulk_update(nodes, ["broker_user"])
    return [{"node_id": n.pk, "api_key": key, "broker": n.broker,
             "broker_url": broker.node_broker_url(n.pk, passwords[n.pk], n.broker),
             "prefix": broker.key_prefix(n.pk)} for n, (key, _, _) in zip(nodes, keys, strict=True)]


def plan_retests(per_day: int) -> dict[str, Any]:
    """The re-test scheduler's planning over the whole fleet, timed: the first tick's (every
    host's re-tests for today and tomorrow) and the next minute's. The plans are then deleted:
    the bench's platform runs no re-tests (lab.platform_stack), which would land in what the
    other sections time."""
    import django

    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "config.settings")
    django.setup()
    from datetime import timedelta

    from django.conf import settings
    from django.test import override_settings
    from django.utils import timezone

    from fleet.models import Node
    from jobs.models import Retest
    from jobs.services import retests

    if settings.RETEST_PER_DAY != 0:
        raise SystemExit("perf.fleet plan makes re-test plans and deletes them: run it on the "
                         "bench's platform (RETEST_PER_DAY=0), not on one that runs re-tests")
    now = timezone.now()
    mark = Retest.objects.order_by("-pk").values_list("pk", flat=True).first() or 0
    out: dict[str, Any] = {"nodes": Node.objects.filter(status=Node.Status.ACTIVE).count()}
    with override_settings(RETEST_PER_DAY=per_day):
        for name, at in (("first", now), ("next", now + timedelta(seconds=60))):
            started = time.perf_counter()
            out[f"{name}_planned"] = retests.plan(at)
            out[f"{name}_s"] = round(time.perf_counter() - started, 4)
    Retest.objects.filter(pk__gt=mark, status=Retest.Status.PLANNED).delete()
    return out


# --- a minimal Redis client (RESP2): 30,000 redis-py connections would not fit ---------------

class ReplyError(Exception):
    pass


def encode(*args: str | bytes | int | float) -> bytes:
    out = [b"*%d\r\n" % len(args)]
    for arg in args:
        data = arg if isinstance(arg, bytes) else str(arg).encode()
        out.append(b"$%d\r\n%s\r\n" % (len(data), data))
    return b"".join(out)


async def read_reply(reader: asyncio.StreamReader) -> Any:
    line = await reader.readline()
    if not line:
        raise ConnectionError("the broker closed the connection")
    kind, rest = line[:1], line[1:-2]
    if kind == b"+":
        return rest
    if kind == b"-":
        raise ReplyError(rest.decode())
    if kind == b":":
        return int(rest)
    if kind == b"$":
        size = int(rest)
        return None if size < 0 else (await reader.readexactly(size + 2))[:-2]
    if kind == b"*":
        size = int(rest)
        return None if size < 0 else [await read_reply(reader) for _ in range(size)]
    raise ReplyError(f"unexpected reply {line[:40]!r}")


class Conn:
    def __init__(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        self.reader = reader
        self.writer = writer

    @classmethod
    async def open(cls, url: str) -> Conn:
        parts = urlsplit(url)
        reader, writer = await asyncio.open_connection(parts.hostname, parts.port or 6379)
        conn = cls(reader, writer)
        await conn.call("AUTH", unquote(parts.username or "default"), unquote(parts.password or ""))
        return conn

    async def call(self, *args: str | bytes | int | float) -> Any:
        self.writer.write(encode(*args))
        return await read_reply(self.reader)


# --- the simulated host -----------------------------------------------------------------------

@dataclass
class Stats:
    beats_ms: list[float] = field(default_factory=list)
    runs: int = 0
    errors: int = 0
    last_error: str = ""

    def fail(self, exc: BaseException) -> None:
        self.errors += 1
        self.last_error = f"{type(exc).__name__}: {exc}"[:300]


# redis-py's lock-release script, which kombu's restore cycle runs (the platform loads it).
RELEASE_SHA = ""


class Host:
    def __init__(self, spec: dict[str, Any], cfg: dict[str, Any], stats: Stats,
                 pool: concurrent.futures.Executor) -> None:
        self.spec = spec
        self.cfg = cfg
        self.stats = stats
        self.pool = pool
        prefix = spec["prefix"]
        queue = f"{prefix}{cfg['queue']}"
        self.queue_keys = [queue, *(f"{queue}{PRIORITY_SEP}{step}" for step in (3, 6, 9))]
        self.alive = f"{prefix}alive"
        self.unacked = f"{prefix}unacked"
        self.unacked_index = f"{prefix}unacked_index"
        self.mutex = f"{prefix}unacked_mutex"
        self.api: Any = None

    async def connect(self) -> None:
        url = self.spec["broker_url"]
        self.brpop = await Conn.open(url)
        self.commands = await Conn.open(url)
        self.beat_conn = await Conn.open(url)

    async def consume(self) -> None:
        timeout = self.cfg["brpop_timeout"]
        while True:
            try:
                popped = await self.brpop.call("BRPOP", *self.queue_keys, timeout)
                if popped:
                    await self.take(popped[1])
            except (ReplyError, OSError, asyncio.IncompleteReadError) as exc:
                self.stats.fail(exc)
                await asyncio.sleep(timeout)

    async def take(self, raw: bytes) -> None:
        message = json.loads(raw)
        tag = message["properties"]["delivery_tag"]
        run_id = json.loads(base64.b64decode(message["body"]))[0][0]
        # kombu's acks_late: into the unacked set while it runs, out when it is acknowledged.
        await self.commands.call("ZADD", self.unacked_index, time.time(), tag)
        await self.commands.call("HSET", self.unacked, tag, raw)
        loop = asyncio.get_running_loop()
        outcome = await loop.run_in_executor(self.pool, self.execute, run_id)
        await self.commands.call("ZREM", self.unacked_index, tag)
        await self.commands.call("HDEL", self.unacked, tag)
        if outcome == "succeeded":
            self.stats.runs += 1
        else:
            self.stats.fail(RuntimeError(f"run {run_id}: {outcome}"))

    def execute(self, run_id: int) -> str:
        from workers.host import execution
        from workers.host.api_client import NodeApi

        if self.api is None:
            self.api = NodeApi(self.cfg["api_url"], self.spec["api_key"])
        try:
            return execution.execute_run(self.api, run_id, inventory_of=lambda: INVENTORY)
        except Exception as exc:  # noqa: BLE001 - counted, and the host carries on
            return f"{type(exc).__name__}: {exc}"

    async def heartbeat(self) -> None:
        every = self.cfg["heartbeat_seconds"]
        await asyncio.sleep(random.uniform(0, every))  # hosts start at different times
        while True:
            started = time.perf_counter()
            try:
                await self.beat_conn.call("SET", self.alive, int(time.time()), "EX", 3 * every)
                self.stats.beats_ms.append((time.perf_counter() - started) * 1000)
            except (ReplyError, OSError, asyncio.IncompleteReadError) as exc:
                self.stats.fail(exc)
            await asyncio.sleep(every)

    async def restore_cycle(self) -> None:
        every = self.cfg["restore_interval"]
        await asyncio.sleep(random.uniform(0, every))
        while True:
            token = os.urandom(8).hex()
            try:
                if await self.commands.call("SET", self.mutex, token, "NX", "PX",
                                            self.cfg["mutex_expire"] * 1000):
                    ceiling = time.time() - self.cfg["visibility_timeout"]
                    await self.commands.call("ZRANGE", self.unacked_index, ceiling, 0, "BYSCORE",
                                             "REV", "LIMIT", 0, 10, "WITHSCORES")
                    await self.commands.call("EVALSHA", RELEASE_SHA, 1, self.mutex, token)
            except (ReplyError, OSError, asyncio.IncompleteReadError) as exc:
                self.stats.fail(exc)
            await asyncio.sleep(every)


async def run_hosts(specs: list[dict[str, Any]], cfg: dict[str, Any], stats_path: Path) -> None:
    stats = Stats()
    pool = concurrent.futures.ThreadPoolExecutor(max_workers=cfg["run_threads"])
    hosts = [Host(spec, cfg, stats, pool) for spec in specs]
    gate = asyncio.Semaphore(100)  # connect in waves: Redis's accept backlog is 511

    async def connect(host: Host) -> None:
        async with gate:
            await host.connect()

    await asyncio.gather(*(connect(h) for h in hosts))
    tasks = [asyncio.create_task(coro) for h in hosts
             for coro in (h.consume(), h.heartbeat(), h.restore_cycle())]
    loop = asyncio.get_running_loop()

    def dump() -> None:
        body = {"hosts": len(hosts), "beats_ms": stats.beats_ms, "runs": stats.runs,
                "errors": stats.errors, "last_error": stats.last_error}
        tmp = stats_path.with_suffix(".tmp")
        tmp.write_text(json.dumps(body))
        tmp.replace(stats_path)
        stats.beats_ms = []

    loop.add_signal_handler(signal.SIGUSR1, dump)
    stop = asyncio.Event()
    loop.add_signal_handler(signal.SIGTERM, stop.set)
    stats_path.with_suffix(".ready").write_text(str(len(hosts)))
    await stop.wait()
    for task in tasks:
        task.cancel()
    pool.shutdown(wait=False, cancel_futures=True)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = parser.add_subparsers(dest="command", required=True)
    seeding = sub.add_parser("seed")
    seeding.add_argument("--count", type=int, required=True)
    seeding.add_argument("--first", type=int, default=0)
    seeding.add_argument("--provider", default="Bench DC")
    seeding.add_argument("--region", default="hangzhou")
    seeding.add_argument("--out", type=Path, required=True)
    planning = sub.add_parser("plan", help="time the re-test planning over the fleet")
    planning.add_argument("--per-day", type=int, default=4)
    running = sub.add_parser("run")
    running.add_argument("--hosts", type=Path, required=True)
    running.add_argument("--shard", default="0/1", help="I/N: this process runs every Nth host")
    running.add_argument("--stats", type=Path, required=True)
    args = parser.parse_args()
    if args.command == "seed":
        hosts = seed(args.count, args.provider, args.region, args.first)
        args.out.write_text(json.dumps(hosts))
        print(f"{len(hosts)} simulated hosts enrolled", flush=True)
        return 0
    if args.command == "plan":
        print(json.dumps(plan_retests(args.per_day)), flush=True)
        return 0
    data = json.loads(args.hosts.read_text())
    index, shards = (int(x) for x in args.shard.split("/"))
    # Three connections per host: the soft limit of open files must allow them all.
    _, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    resource.setrlimit(resource.RLIMIT_NOFILE, (hard, hard))
    global RELEASE_SHA
    from redis.lock import Lock

    from workers.host import inventory
    from workers.host.redis_transport import BRPOP_TIMEOUT

    RELEASE_SHA = hashlib.sha1(Lock.LUA_RELEASE_SCRIPT.encode(), usedforsecurity=False).hexdigest()
    INVENTORY.update(inventory.collect())
    cfg = {**data["config"], "brpop_timeout": BRPOP_TIMEOUT}
    asyncio.run(run_hosts(data["hosts"][index::shards], cfg, args.stats))
    return 0


if __name__ == "__main__":
    sys.exit(main())
