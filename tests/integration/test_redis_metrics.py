"""Metrics of a cluster on Redis: nodes flush into one prefix, a reader merges them."""

from __future__ import annotations

import uuid
from collections.abc import AsyncIterator

import pytest
from redis.asyncio import Redis
from services import require

from tickwheel.clock import ManualClock
from tickwheel.metrics.recorder import Event, Lateness, Recorder
from tickwheel.metrics.redis import EXPIRE_SECONDS, FINAL_AFTER_SECONDS, RedisMetrics
from tickwheel.metrics.window import WINDOW_SECONDS, lateness, series
from tickwheel.queue.base import ReadyItem

T0 = 1_767_225_600_000


@pytest.fixture
async def redis() -> AsyncIterator[tuple[str, str]]:
    url, prefix = require("redis"), f"tw-metrics-{uuid.uuid4().hex[:8]}:"
    yield url, prefix
    client = Redis.from_url(url)
    keys = [k async for k in client.scan_iter(match=f"{prefix}*")]
    if keys:
        await client.delete(*keys)
    await client.aclose()


def node(clock: ManualClock, redis: tuple[str, str]) -> tuple[Recorder, RedisMetrics]:
    """One node's recorder and the store it flushes to."""
    url, prefix = redis
    recorder = Recorder(clock)
    return recorder, RedisMetrics.from_url(recorder, url, prefix=prefix)


def items(count: int, lateness_ms: int, now_ms: int) -> list[ReadyItem]:
    return [ReadyItem(i, "default", 0, now_ms - lateness_ms, now_ms) for i in range(count)]


async def test_two_nodes_flush_into_one_prefix_and_a_reader_merges_them(
    redis: tuple[str, str],
) -> None:
    clock = ManualClock(T0)
    (on_a, a), (on_b, b), (_, reader) = node(clock, redis), node(clock, redis), node(clock, redis)
    try:
        on_a.released(items(3, 10, clock.now_ms()))
        on_b.released(items(2, 1000, clock.now_ms()))
        clock.advance(1)
        on_a.count(Event.SUCCEEDED, 4)
        on_b.count(Event.SUCCEEDED, 1)
        await a.flush()
        await b.flush()

        seconds = await reader.seconds(clock.now_ms())
    finally:
        for metrics in (a, b, reader):
            await metrics.close()

    got = series(seconds, clock.now_ms())
    assert got.counts[Event.TRIGGERED][-2:] == [5, 0]
    assert got.counts[Event.SUCCEEDED][-2:] == [0, 5]
    trigger = lateness(seconds, clock.now_ms(), Lateness.TRIGGER)
    assert trigger.samples == 5
    assert trigger.p50 is not None and 8 <= trigger.p50 <= 12
    assert trigger.p99 is not None and 875 <= trigger.p99 <= 1125


async def test_a_flush_is_one_hash_per_second_that_expires_after_the_window(
    redis: tuple[str, str],
) -> None:
    clock = ManualClock(T0)
    recorder, metrics = node(clock, redis)
    client = Redis.from_url(redis[0])
    try:
        recorder.count(Event.STARTED, 7)
        await metrics.flush()
        await metrics.flush()  # nothing new: nothing written
        key = f"{redis[1]}metrics:{T0 // 1000}"
        assert await client.hgetall(key) == {b"started": b"7"}
        assert WINDOW_SECONDS < await client.ttl(key) <= EXPIRE_SECONDS
    finally:
        await metrics.close()
        await client.aclose()


async def test_the_reader_keeps_final_seconds_and_reads_recent_ones_again(
    redis: tuple[str, str],
) -> None:
    clock = ManualClock(T0)
    (recorder, metrics), (_, reader) = node(clock, redis), node(clock, redis)
    client = Redis.from_url(redis[0])
    old, recent = T0 // 1000, T0 // 1000 + FINAL_AFTER_SECONDS + 1
    try:
        recorder.count(Event.FAILED)
        await metrics.flush()
        clock.advance(FINAL_AFTER_SECONDS + 1)
        recorder.count(Event.FAILED)
        await metrics.flush()
        first = series(await reader.seconds(clock.now_ms()), clock.now_ms())
        # Written behind the reader's back: a final second is not read again.
        await client.hincrby(f"{redis[1]}metrics:{old}", "failed", 10)
        await client.hincrby(f"{redis[1]}metrics:{recent}", "failed", 10)

        again = series(await reader.seconds(clock.now_ms()), clock.now_ms())
        clock.advance(WINDOW_SECONDS - FINAL_AFTER_SECONDS - 1)  # `old` leaves the window
        later = series(await reader.seconds(clock.now_ms()), clock.now_ms())
    finally:
        for m in (metrics, reader):
            await m.close()
        await client.aclose()

    failed = first.counts[Event.FAILED]
    assert (failed[-1 - (recent - old)], failed[-1], sum(failed)) == (1, 1, 2)
    assert again.counts[Event.FAILED][-1] == 11
    assert sum(again.counts[Event.FAILED]) == 12
    assert sum(later.counts[Event.FAILED]) == 11
