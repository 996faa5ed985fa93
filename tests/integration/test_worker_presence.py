"""Workers over HTTP are recorded alive at most once per interval per worker id."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from tickwheel.clock import ManualClock
from tickwheel.engine.presence import Sightings
from tickwheel.storage.sqlite.store import SqliteStore


@pytest.fixture
async def store(tmp_path: Path) -> AsyncIterator[SqliteStore]:
    opened = SqliteStore(str(tmp_path / "w.db"))
    await opened.open()
    yield opened
    await opened.close()


async def last_seen(store: SqliteStore) -> dict[str, tuple[int, tuple[str, ...]]]:
    return {w.worker_id: (w.seen_ms, w.queues) for w in await store.live_workers()}


async def test_a_second_sighting_within_the_interval_writes_nothing(store: SqliteStore) -> None:
    clock = ManualClock(1_000_000)
    sightings = Sightings(store=store, clock=clock, interval_seconds=5)
    await sightings.seen("w", ["a"])
    first = await last_seen(store)

    await asyncio.sleep(0.01)  # the store's clock moves on; this node's does not
    await sightings.seen("w", ["a"])
    await sightings.seen("w")  # a heartbeat
    assert await last_seen(store) == first

    clock.advance(5)
    await sightings.seen("w")
    again = await last_seen(store)
    assert again["w"][0] > first["w"][0] and again["w"][1] == ("a",)


async def test_new_queues_are_written_at_once(store: SqliteStore) -> None:
    sightings = Sightings(store=store, clock=ManualClock(0), interval_seconds=5)
    await sightings.seen("w", ["a"])
    await sightings.seen("w", ["b"])
    await sightings.seen("other", ["a"])
    assert {k: v[1] for k, v in (await last_seen(store)).items()} == {
        "w": ("b",),
        "other": ("a",),
    }
