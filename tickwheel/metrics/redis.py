"""Metrics of a cluster, on Redis: every node adds its counts into one hash per second.

Key layout, under the cluster's prefix P:

    P metrics:<second>   hash   field -> count (see `recorder`), summed over all nodes;
                                expires 16 minutes after its last write

Each node counts in memory and flushes once a second, in one pipeline: an HINCRBY per
field counted and an EXPIRE per second touched. Adding is the merge, so a reader just
reads the hashes. It does not read all 900 every time: a second older than
`FINAL_AFTER_SECONDS` has received every node's flush (they flush each second), so it
is read once and kept; only the last few seconds are read again on each call.
"""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Mapping
from typing import TypeVar

from redis.asyncio import Redis

from tickwheel.errors import MetricsUnavailable
from tickwheel.metrics.recorder import Recorder
from tickwheel.metrics.window import WINDOW_SECONDS, Seconds, window_range
from tickwheel.outage import Outage
from tickwheel.queue.redis import REDIS_FAILURES

log = logging.getLogger(__name__)
T = TypeVar("T")

EXPIRE_SECONDS = WINDOW_SECONDS + 60
FINAL_AFTER_SECONDS = 5


class RedisMetrics:
    def __init__(self, recorder: Recorder, client: Redis, *, prefix: str) -> None:
        self._recorder = recorder
        self._redis = client
        self._prefix = f"{prefix}metrics:"
        self._final: dict[int, dict[str, int]] = {}  # seconds read once they were final
        self.health = Outage("the metrics store (Redis)", log)

    @classmethod
    def from_url(cls, recorder: Recorder, url: str, *, prefix: str) -> RedisMetrics:
        client = Redis.from_url(url, socket_connect_timeout=5, socket_keepalive=True)
        return cls(recorder, client, prefix=prefix)

    def _key(self, second: int) -> str:
        return f"{self._prefix}{second}"

    async def flush(self) -> None:
        taken = self._recorder.take()
        if not taken:
            return
        pipe = self._redis.pipeline(transaction=False)
        for second, counts in taken.items():
            key = self._key(second)
            for field, n in counts.items():
                pipe.hincrby(key, field, n)
            pipe.expire(key, EXPIRE_SECONDS)
        try:
            await self._reported(pipe.execute())
        except BaseException:
            # Counted again at the next flush. A pipeline is not atomic, so a flush cut
            # short may count some fields twice: a dashboard can live with that.
            self._recorder.give_back(taken)
            raise

    async def seconds(self, now_ms: int) -> Seconds:
        await self.flush()  # this node's own counts of the current second count too
        span = window_range(now_ms)
        for second in [s for s in self._final if s < span.start]:
            del self._final[second]
        final_until = span.stop - 1 - FINAL_AFTER_SECONDS
        wanted = [s for s in span if s > final_until or s not in self._final]
        pipe = self._redis.pipeline(transaction=False)
        for second in wanted:
            pipe.hgetall(self._key(second))
        read: dict[int, Mapping[str, int]] = dict(self._final)
        for second, row in zip(wanted, await self._reported(pipe.execute()), strict=True):
            counts = {k.decode(): int(v) for k, v in row.items()}
            read[second] = counts
            if second <= final_until:
                self._final[second] = counts
        return read

    async def _reported(self, call: Awaitable[T]) -> T:
        return await self.health.call(call, fails_on=REDIS_FAILURES, raise_as=MetricsUnavailable)

    async def close(self) -> None:
        try:
            await self.flush()
        except MetricsUnavailable as error:
            log.warning("the last metrics could not be flushed to Redis (%s)", error)
        await self._redis.aclose()
