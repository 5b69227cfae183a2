"""The baseline for dispatch and end-to-end throughput: bare Celery on the same Redis.

`python -m perf.bare worker REDIS_URL` runs a worker whose one task records when it
started (epoch seconds) into the Redis list ``bench:bare:started``.
"""

from __future__ import annotations

import os
import sys
import time

import redis
from celery import Celery
from celery.signals import worker_ready


def make_app(url: str) -> Celery:
    app = Celery("bench-bare", broker=url)
    app.conf.update(task_ignore_result=True, worker_prefetch_multiplier=1, task_acks_late=True,
                    worker_enable_remote_control=False, worker_send_task_events=False,
                    broker_connection_retry_on_startup=True, task_default_queue="bench-bare")
    client = redis.Redis.from_url(url)

    @worker_ready.connect(weak=False)
    def ready(**_: object) -> None:
        # The bench starts timing only once every worker has said so: a start-up (slow on a
        # fresh clone, which compiles every module first) is not throughput.
        client.rpush("bench:bare:ready", os.getpid())

    @app.task(name="perf.bare.started")
    def started(sent_at: float) -> None:
        client.rpush("bench:bare:started", f"{sent_at} {time.time()}")

    return app


if __name__ == "__main__":
    make_app(sys.argv[2]).worker_main(["worker", "--pool", "solo", "-Q", "bench-bare",
                                      "--without-gossip", "--without-mingle", "--without-heartbeat",
                                      "--loglevel", "WARNING"])
