"""arq, as its documentation runs it.

Worker: `arq bench.peers.arq_tasks.WorkerSettings`, once per core: an arq
worker is one asyncio process, and its documentation scales by running more workers.
Its defaults are kept (`max_jobs` 10, a poll of the queue every 0.5 s, results kept an
hour). Redis is at the sink's URL (`reset` deletes its keys).

Submission: `enqueue_job("record", run, index, _defer_until=...)`, one call per task,
since arq has no bulk enqueue; the calls of a chunk run concurrently on the pool, as
asyncio code ordinarily does.

Logging: arq's CLI logs every job at INFO; `--custom-log-dict` (its documented hook)
raises that to WARNING.
"""

from __future__ import annotations

import asyncio

from arq import ArqRedis, create_pool
from arq.connections import RedisSettings

from bench.peers import arq_tasks
from bench.peers.shared import InSinkRedis, eta, per_core
from bench.peers.sink import sink_url


class ArqPeer(InSinkRedis):
    name = "arq"
    distribution = "arq"
    broker_keys = ("arq:*",)

    def __init__(self) -> None:
        self._redis: ArqRedis | None = None

    def worker_commands(self) -> list[list[str]]:
        settings = f"{arq_tasks.__name__}.WorkerSettings"
        return per_core("arq", settings, "--custom-log-dict", f"{arq_tasks.__name__}.LOG_CONFIG")

    async def submit(self, run: str, indexes: range, due_ms: int | None) -> None:
        if self._redis is None:
            self._redis = await create_pool(RedisSettings.from_dsn(sink_url()))
        when = eta(due_ms)
        await asyncio.gather(
            *(self._redis.enqueue_job(arq_tasks.TASK, run, i, _defer_until=when) for i in indexes)
        )

    async def close(self) -> None:
        if self._redis is not None:
            await self._redis.aclose()


def peer() -> ArqPeer:
    return ArqPeer()
