"""Workers over HTTP are recorded alive at most once per interval per worker id."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from tickwheel.clock import ManualClock
from tickwheel.config import Settings
from tickwheel.engine.presence import Sightings
from tickwheel.node import Node
from tickwheel.storage.sqlite.store import SqliteStore
from tickwheel.worker.registry import App


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


async def test_task_types_are_said_with_the_queues_and_written_when_they_change(
    store: SqliteStore,
) -> None:
    sightings = Sightings(store=store, clock=ManualClock(0), interval_seconds=5)
    await sightings.seen("w", ["a"], ["greet"])
    await sightings.seen("w")  # a heartbeat keeps them
    assert [w.task_types for w in await store.live_workers()] == [("greet",)]
    await sightings.seen("w", ["a"], ["greet", "wave"])
    assert [w.task_types for w in await store.live_workers()] == [("greet", "wave")]
    await sightings.seen("w", ["a"])  # no types named: any
    assert [w.task_types for w in await store.live_workers()] == [None]


async def test_an_in_process_worker_reports_its_apps_types_built_ins_included(
    tmp_path: Path,
) -> None:
    app = App()
    app.task("greet")(lambda ctx, payload: None)
    settings = Settings(database_url=f"sqlite:///{tmp_path / 'n.db'}")
    async with Node(settings=settings, app=app) as node:
        deadline = asyncio.get_running_loop().time() + 10
        while not (found := await node.store.live_workers()):
            assert asyncio.get_running_loop().time() < deadline
            await asyncio.sleep(0.05)
    (worker,) = found
    assert {"greet", "noop", "http"} <= set(worker.task_types or ())
