"""Celery, as its documentation sets it up for production on one machine, over Redis.

Worker: `celery -A bench.peers.celery_tasks worker --concurrency N
--loglevel WARNING`, one command, since Celery forks its own pool: the default prefork
pool ("the default is the number of CPUs available on your system", which we write out
as N = cores), the default prefetch multiplier (4) and the default `-O fair`
scheduling; no result backend (the task returns nothing and nobody reads a result).
Logs at WARNING so that a line per task does not dominate.

Submission: one `apply_async(args, eta=...)` per task, as Celery has no bulk publish
(a `group` is a workflow primitive and still publishes message by message). With the
Redis broker an ETA task is delivered at once and held in the worker's memory until it
is due (the documented behaviour, within the default one-hour visibility timeout).
"""

from __future__ import annotations

from datetime import datetime

from celery import Celery

from bench.peers import recorder
from bench.peers.redis_brokered import CORES, RedisBrokered, script
from bench.peers.sink import sink_url

TASK = "tickwheel_bench.record"
APP_MODULE = "bench.peers.celery_tasks"


def make_app(broker_url: str) -> Celery:
    """A Celery app on `broker_url` whose one task is the shared body, `record`."""
    app = Celery("tickwheel_bench", broker=broker_url, set_as_current=False)
    # the default behaviour, stated so that Celery 5 does not warn about it at startup
    app.conf.broker_connection_retry_on_startup = True
    app.task(name=TASK)(recorder.record)
    return app


class CeleryPeer(RedisBrokered):
    name = "Celery"
    distribution = "celery"
    broker_keys = ("celery*", "_kombu.*", "unacked*")

    def __init__(self) -> None:
        self.app = make_app(sink_url())

    def worker_commands(self) -> list[list[str]]:
        return [
            [
                script("celery"),
                "-A",
                APP_MODULE,
                "worker",
                "--concurrency",
                str(CORES),
                "--loglevel",
                "WARNING",
            ]
        ]

    def enqueue(self, run: str, indexes: range, eta: datetime | None) -> None:
        task = self.app.tasks[TASK]
        for index in indexes:
            task.apply_async((run, index), eta=eta)

    def release(self) -> None:
        self.app.close()


def peer() -> CeleryPeer:
    return CeleryPeer()
