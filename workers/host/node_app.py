"""The node worker's Celery app, built from the credentials the host got at enrolment.

Confined by construction: one queue under the node's own key prefix, no result backend,
no events, no remote control, no gossip or mingle; results go to the API, never to Redis.
"""

from __future__ import annotations

import asyncio
import logging
import os
import subprocess
import threading
import time

import redis
from celery import Celery
from celery.signals import worker_ready

from benchmarks import runner
from benchmarks.probes.network import served_log
from contract.site_probe import gate_port
from contract.tasks import EXECUTE_RUN_TASK
from workers.host import execution
from workers.host.api_client import ApiError, NodeApi
from workers.host.config import NodeConfig, liveness_key
from workers.host.netif import set_socket_ifname
from workers.host.redis_transport import node_broker_url

log = logging.getLogger(__name__)


class Heartbeat(threading.Thread):
    """Tells the platform this node is online, also while it is idle or busy.

    Each beat sets the node's liveness key on its broker, over a connection of its own, and
    the platform's sweeper takes every node's key in one pass: no HTTPS request and no
    database write per beat (10,000 hosts beat 333 times a second). The first beat, and any
    the broker refuses (a node enrolled before its ACL allowed the key, or a broker down),
    go over HTTPS as before.
    """

    def __init__(self, api: NodeApi, every: float, broker_url: str, key: str) -> None:
        super().__init__(name="heartbeat", daemon=True)
        self.api = api
        self.every = every
        self.key = key
        self.broker = redis.Redis.from_url(broker_url, socket_timeout=5,
                                           socket_connect_timeout=5)

    def beat(self) -> str:
        """One heartbeat; returns the way it went ("broker" or "https")."""
        try:
            # The TTL only tidies up after a platform that stopped sweeping; the sweeper
            # deletes the key it finds, so a host's TTL cannot keep it online.
            self.broker.set(self.key, int(time.time()), ex=max(3 * int(self.every), 10))
            return "broker"
        except redis.RedisError as exc:
            log.warning("heartbeat over the broker failed (%s); sending it over HTTPS", exc)
        self.api.heartbeat()
        return "https"

    def run(self) -> None:
        try:
            self.api.heartbeat()  # shown online at once, not at the next sweep
        except ApiError as exc:
            log.warning("heartbeat failed: %s", exc)
        while True:
            try:
                # The first at once too: a broker that refuses it is logged at start.
                self.beat()
            except ApiError as exc:
                log.warning("heartbeat failed: %s", exc)
            time.sleep(self.every)


def make_app(config: NodeConfig) -> Celery:
    ifname = set_socket_ifname(config.address)
    if ifname:
        log.info("gloo/NCCL will use %s (the interface of %s)", ifname, config.address)
    app = Celery(f"node-{config.node_id}", set_as_current=True)
    app.conf.update(
        broker_url=node_broker_url(config.broker_url),
        broker_transport_options=config.broker_transport_options,
        broker_connection_retry_on_startup=True,
        result_backend=None,
        task_ignore_result=True,
        task_acks_late=True,
        # A task that raised (platform unreachable) is not acked: Redis delivers it again.
        task_acks_on_failure_or_timeout=False,
        worker_prefetch_multiplier=1,
        worker_enable_remote_control=False,
        worker_send_task_events=False,
        task_send_sent_event=False,
        task_default_queue=config.queue,
        worker_hijack_root_logger=True,
    )
    api = NodeApi(config.api_url, config.api_key)

    @worker_ready.connect(weak=False)
    def start_heartbeat(**_: object) -> None:
        Heartbeat(NodeApi(config.api_url, config.api_key), config.heartbeat_seconds,
                  config.broker_url, liveness_key(config)).start()
        if config.address:
            start_iperf3_server(config)
            start_probe_gate(config)

    @app.task(name=EXECUTE_RUN_TASK)
    def execute_run(run_id: int) -> str:
        return execution.execute_run(api, int(run_id))

    return app


def start_iperf3_server(config: NodeConfig) -> subprocess.Popen[bytes] | None:
    """The peer side of node-to-node tests: an iperf3 server on the enrolled address,
    killed with the worker. Its JSON log is this node's own count of every test a peer
    sends it, which the network probe reports beside the sender's (both ends of a link)."""
    log_path = served_log(config.address, config.iperf3_port)
    log_path.parent.mkdir(parents=True, exist_ok=True)
    log_path.unlink(missing_ok=True)  # a run reads only what it served; no log without end
    argv = ["iperf3", "-s", "-B", config.address, "-p", str(config.iperf3_port), "-J",
            "--logfile", str(log_path)]
    try:
        server = subprocess.Popen(argv, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                                  preexec_fn=runner.die_with_parent)  # noqa: PLW1509
    except FileNotFoundError:
        log.warning("iperf3 is not installed: other nodes cannot test their link to this one")
        return None
    log.info("iperf3 server for node-to-node tests on %s:%s", config.address, config.iperf3_port)
    return server


def start_probe_gate(config: NodeConfig) -> threading.Thread:
    """The test server for buyers' probes from their sites (workers/host/probe_gate.py), on
    the enrolled address, in a thread of the worker: it dies with it."""
    from workers.host.probe_gate import ProbeGate

    port = gate_port(config.iperf3_port)
    directory = served_log(config.address, port).with_name(f"probe-gate-{config.address}-{port}")
    gate = ProbeGate(NodeApi(config.api_url, config.api_key), config.address, port,
                     config.iperf3_port, directory)
    def serve() -> None:
        try:
            asyncio.run(gate.serve())
        except OSError as exc:  # the port taken: node-to-node tests go on without it
            log.warning("no test server for buyers' probes on %s:%s: %s", config.address,
                        port, exc)

    thread = threading.Thread(target=serve, name="probe-gate", daemon=True)
    thread.start()
    log.info("test server for buyers' probes on %s:%s", config.address, port)
    return thread


def worker_argv(config: NodeConfig, loglevel: str = "INFO") -> list[str]:
    return [
        "worker", "-Q", config.queue, "--pool", "solo", "--concurrency", "1",
        "--without-gossip", "--without-mingle", "--without-heartbeat",
        "-n", f"node-{config.node_id}@{os.uname().nodename}", "--loglevel", loglevel,
    ]


def run_worker(config: NodeConfig, loglevel: str = "INFO") -> None:
    make_app(config).worker_main(worker_argv(config, loglevel))
