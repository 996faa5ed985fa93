"""Huey, as its documentation sets it up for production on one machine, over Redis.

Worker: `huey_consumer bench.peers.huey_tasks.huey -w N -k thread -g TERM -q`,
one command, since the consumer runs its own workers. Huey's docs on `-k`: "CPU heavy
loads: use process ... IO heavy loads: use greenlet ... Anything else: use thread ... A
safe choice and the default"; a task that pushes one entry to Redis is "anything else".
On `-w`: "The default is 1, but most applications will want at least 2 ... For
CPU-bound workloads, scale toward the number of CPU cores"; N = cores (2 here). `-g TERM`
because the deployment guide asks for it when a supervisor stops with SIGTERM (the
harness does; without it Huey interrupts running tasks). Default scheduler interval (1
s), default `RedisHuey` storage (blocking pops); `-q` logs at WARNING.

Submission: Huey has no bulk enqueue (`map` and `group` enqueue task by task), so one
call per task: the task wrapper called for now, `.schedule(args, eta=...)` for an ETA.
An ETA task goes to the queue at once; a worker moves it to the schedule, and the
scheduler enqueues it again once it is due.
"""

from __future__ import annotations

from datetime import datetime
from typing import Any

from huey import RedisHuey

from bench.peers import recorder
from bench.peers.redis_brokered import CORES, RedisBrokered, script
from bench.peers.sink import sink_url

HUEY = "bench.peers.huey_tasks.huey"


def make_huey(url: str) -> tuple[RedisHuey, Any]:
    """A Huey on `url`, and its one task: the shared body, `record`."""
    huey = RedisHuey("tickwheel-bench", url=url)
    return huey, huey.task()(recorder.record)


class HueyPeer(RedisBrokered):
    name = "Huey"
    distribution = "huey"
    broker_keys = ("huey.*",)

    def __init__(self) -> None:
        self.huey, self.task = make_huey(sink_url())

    def worker_commands(self) -> list[list[str]]:
        workers = ["-w", str(CORES), "-k", "thread"]
        return [[script("huey_consumer"), HUEY, *workers, "-g", "TERM", "-q"]]

    def enqueue(self, run: str, indexes: range, eta: datetime | None) -> None:
        for index in indexes:
            if eta is None:
                self.task(run, index)
            else:
                self.task.schedule(args=(run, index), eta=eta)

    def release(self) -> None:
        self.huey.storage.pool.disconnect()


def peer() -> HueyPeer:
    return HueyPeer()
