"""The node worker's Celery app, built from the credentials the host got at enrolment.

Confined by construction: one queue under the node's own key prefix, no result backend,
no events, no remote control, no gossip or mingle; results go to the API, never to Redis.
"""

from __future__ import annotations

import logging
import os
import subprocess
import threading
import time

from celery import Celery
from celery.signals import worker_ready

from benchmarks import runner
from benchmarks.probes.network import served_log
from contract.tasks import EXECUTE_RUN_TASK
from workers.host import execution
from workers.host.api_client import ApiError, NodeApi
from workers.host.config import NodeConfig
from workers.host.netif import set_socket_ifname
from workers.host.redis_transport import node_broker_url

log = logging.getLogger(__name__)


class Heartbeat(threading.Thread):
    """Tells the platform this node is online, also while it is idle or busy."""

    def __init__(self, api: NodeApi, every: float) -> None:
        super().__init__(name="heartbeat", daemon=True)
        self.api = api
        self.every = every

    def run(self) -> None:
        while True:
            try:
                self.api.heartbeat()
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
        Heartbeat(NodeApi(config.api_url, config.api_key), config.heartbeat_seconds).start()
        if config.address:
            start_iperf3_server(config)

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


def worker_argv(config: NodeConfig, loglevel: str = "INFO") -> list[str]:
    return [
        "worker", "-Q", config.queue, "--pool", "solo", "--concurrency", "1",
        "--without-gossip", "--without-mingle", "--without-heartbeat",
        "-n", f"node-{config.node_id}@{os.uname().nodename}", "--loglevel", loglevel,
    ]


def run_worker(config: NodeConfig, loglevel: str = "INFO") -> None:
    make_app(config).worker_main(worker_argv(config, loglevel))
