"""Shared fixtures: a private Redis with ACLs, the live API, enrolled nodes, node workers.

Everything is real: PostgreSQL (DATABASE_URL), redis-server, iperf3, Celery worker processes.
"""

from __future__ import annotations

import os
import secrets
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from django.conf import settings
from django.core.cache import cache
from hypothesis import settings as hypothesis_settings

from benchmarks.probes import cpu_threads
from lab import procs

pytest_plugins = ["tests.fixtures", "tests.fixtures.webhooks"]

# No per-example deadline: a deadline is a timing assertion, and on a 2-core machine that
# runs two test processes (and a lab) an example's first call can take 300 ms for no fault
# of the code. Property tests check what the code does; `make bench` checks how fast.
hypothesis_settings.register_profile("suite", deadline=None)
hypothesis_settings.load_profile("suite")


@pytest.fixture(autouse=True)
def english_after_each_test() -> Iterator[None]:
    """A page fetched in Chinese with the test client leaves Chinese active in this thread
    (LocaleMiddleware activates, nothing deactivates): the next test of the same process,
    whichever it is, would read its English sentences in Chinese."""
    yield
    from django.utils import translation

    translation.deactivate()


@pytest.fixture(scope="session")
def run_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("run")


@pytest.fixture(scope="session")
def private_redis(run_dir: Path) -> Iterator[procs.PrivateRedis]:
    instance = procs.start_private_redis(run_dir / "redis", secrets.token_hex(16))
    yield instance
    instance.proc.stop()


@pytest.fixture(scope="session")
def second_redis(run_dir: Path) -> Iterator[procs.PrivateRedis]:
    """A second broker for nodes (NODE_BROKERS), started only by the tests that use it."""
    instance = procs.start_private_redis(run_dir / "redis-b", secrets.token_hex(16))
    yield instance
    instance.proc.stop()


@pytest.fixture
def two_brokers(private_redis: procs.PrivateRedis, second_redis: procs.PrivateRedis,
                settings: Any) -> tuple[procs.PrivateRedis, procs.PrivateRedis]:
    """NODE_BROKERS with two Redis servers: "default" (the platform's own) and "b"."""
    settings.NODE_BROKERS = {"default": private_redis.admin_url, "b": second_redis.admin_url}
    settings.NODE_BROKER_PUBLIC_URLS = {}
    return private_redis, second_redis


# A test that touches the platform (its database, its live server) gets the private Redis;
# a parser's or a probe's test starts nothing.
PLATFORM_FIXTURES = {"db", "transactional_db", "live_server", "django_db_setup", "private_redis"}


@pytest.fixture(autouse=True)
def broker_settings(request: pytest.FixtureRequest) -> Iterator[None]:
    """Point the platform at the private Redis, in ACL mode, with short test timings."""
    if not PLATFORM_FIXTURES & set(request.fixturenames) and not request.node.get_closest_marker(
            "django_db"):
        yield
        return
    from config.celery_app import app
    from fleet.services import broker

    private_redis: procs.PrivateRedis = request.getfixturevalue("private_redis")
    settings: Any = request.getfixturevalue("settings")

    settings.REDIS_URL = private_redis.admin_url
    settings.NODE_BROKER_URL = private_redis.admin_url
    settings.NODE_BROKER_ACL = True
    settings.NODE_VISIBILITY_TIMEOUT = 6
    settings.NODE_UNACKED_RESTORE_INTERVAL = 1
    settings.NODE_UNACKED_MUTEX_EXPIRE = 5
    settings.RUN_LEASE_SECONDS = 3
    app.conf.broker_url = private_redis.admin_url
    broker.admin_client.cache_clear()
    broker._client_at.cache_clear()
    cache.clear()  # throttle counters: each test starts with none
    yield
    broker.admin_client.cache_clear()


@pytest.fixture(scope="session")
def echo_log(run_dir: Path) -> Path:
    """The reference echo server's own record of every token-bearing connection."""
    return run_dir / "reference-echo.jsonl"


@pytest.fixture(scope="session")
def echo_port(run_dir: Path, echo_log: Path) -> Iterator[int]:
    port = procs.free_port()
    server = procs.start_echo_server(port, run_dir, record_log=echo_log)
    yield port
    server.stop()


@pytest.fixture(scope="session")
def iperf3_log(run_dir: Path) -> Path:
    """The reference iperf3 server's own JSON log (iperf3 -s -J --logfile)."""
    return run_dir / "reference-iperf3.json"


@pytest.fixture(scope="session")
def iperf3_port(run_dir: Path, iperf3_log: Path) -> Iterator[int]:
    port = procs.free_port()
    server = procs.start_iperf3_server(port, run_dir, report_log=iperf3_log)
    yield port
    server.stop()


class WorkerFactory:
    """Starts node worker processes; every one is stopped when the test ends."""

    def __init__(self, log_dir: Path) -> None:
        self.log_dir = log_dir
        self.started: list[procs.Proc] = []

    def __call__(self, config_path: Path, name: str) -> procs.Proc:
        return self.many([(config_path, name)])[0]

    def many(self, workers: list[tuple[Path, str]], timeout: float = 60) -> list[procs.Proc]:
        """Start them all, then wait for each: on two cores a worker takes seconds to
        import its probes, and one after the other added up to minutes per run."""
        started = [procs.start_node_worker(path, self.log_dir, name) for path, name in workers]
        self.started.extend(started)
        for proc in started:
            procs.wait_worker_ready(proc, timeout=timeout)
        return started

    def stop_all(self) -> None:
        procs.stop_all(self.started)


@pytest.fixture
def worker_factory(run_dir: Path) -> Iterator[WorkerFactory]:
    factory = WorkerFactory(run_dir)
    yield factory
    factory.stop_all()


def pytest_configure(config: pytest.Config) -> None:
    # Two test processes and the demo's lab share this machine's two cores, as the lab's
    # hosts do: torch in each (the GPU probe on the CPU, gpu-check, the training ranks) takes
    # one thread, as a lab host's does (lab.procs.NODE_WORKER_ENV). With one a core each,
    # test_gpu_check's matmuls took 50 s beside the suite, 2.4 s alone.
    os.environ.setdefault(cpu_threads.ENV, "1")
    # Tests run in ACL mode against their own Redis; the machine's Redis is not touched.
    settings.NODE_BROKER_ACL = True
    # A reference agent's post is a PostgreSQL commit, and beside the demo's fio and
    # checkpoint fsyncs on this 2-core machine a commit can wait seconds for the disk; CI
    # at stop 41 most likely judged an honest certification before its records were in
    # ("unverified"). Tests of the bounded wait itself set the production figure back.
    settings.REFERENCE_RECORDS_WAIT_S = 20.0
