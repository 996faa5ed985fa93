"""Who runs what: the live workers read at most once a second, one read shared by the
callers meanwhile; this node's own worker and the built-in types count from the start."""

from __future__ import annotations

import asyncio

from tickwheel.clock import ManualClock
from tickwheel.engine.workforce import Handles, Workforce
from tickwheel.errors import StoreUnavailable
from tickwheel.storage.base import WorkerBeat, WorkerRecord


class Workers:
    """A worker store that counts its reads."""

    def __init__(self, *records: WorkerRecord) -> None:
        self.records = list(records)
        self.reads = 0
        self.failing = False

    async def live_workers(self) -> list[WorkerRecord]:
        self.reads += 1
        await asyncio.sleep(0)
        if self.failing:
            raise StoreUnavailable("down")
        return list(self.records)

    async def worker_seen(self, beat: WorkerBeat, *, ttl_ms: int) -> None: ...

    async def worker_left(self, worker_id: str) -> None: ...


def worker(queues: tuple[str, ...], task_types: tuple[str, ...] | None) -> WorkerRecord:
    return WorkerRecord("w", "http", queues, None, 0, 0, 0, 0, task_types)


async def test_the_workers_are_read_at_most_once_a_second_by_everyone_at_once() -> None:
    store, clock = Workers(worker(("default",), ("greet",))), ManualClock(0)
    workforce = Workforce(store=store, clock=clock)

    found = await asyncio.gather(*(workforce.unregistered({"greet", "wave"}) for _ in range(50)))

    assert found == [{"wave"}] * 50 and store.reads == 1
    store.records = [worker(("default",), None)]  # now one takes any type
    assert await workforce.unregistered({"wave"}) == {"wave"}  # still the read of before
    clock.advance(1)
    assert await workforce.unregistered({"wave"}) == set() and store.reads == 2


async def test_a_queue_and_a_type_are_taken_together() -> None:
    workforce = Workforce(store=Workers(worker(("default",), ("greet",))), clock=ManualClock(0))
    assert await workforce.takes("default", "greet")
    assert not await workforce.takes("emails", "greet")
    assert not await workforce.takes("default", "wave")


async def test_this_nodes_worker_and_the_built_ins_count_before_any_report() -> None:
    own = Handles(frozenset({"default"}), frozenset({"greet", "noop"}))
    workforce = Workforce(store=Workers(), clock=ManualClock(0), own=own, built_in={"http"})
    assert await workforce.unregistered({"greet", "http", "wave"}) == {"wave"}
    assert await workforce.takes("default", "greet")


async def test_unreadable_workers_warn_of_nothing() -> None:
    store = Workers()
    store.failing = True
    workforce = Workforce(store=store, clock=ManualClock(0))
    assert await workforce.unregistered({"wave"}) == set()
    assert await workforce.takes("default", "wave") is None
