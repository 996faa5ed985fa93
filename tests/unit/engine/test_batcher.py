"""Batcher: group commit of concurrent submits, results in order, failures kept to their batch."""

from __future__ import annotations

import asyncio

import pytest

from tickwheel.engine.batcher import Batcher
from tickwheel.errors import InvalidRequest, RejectedItems


class Store:
    """A flush target that records each batch and can be held open or made to fail."""

    def __init__(self) -> None:
        self.batches: list[list[int]] = []
        self.gate = asyncio.Event()
        self.gate.set()
        self.started = asyncio.Event()
        self.fail_on: set[int] = set()
        self.refuse: set[int] = set()

    async def flush(self, items: list[int]) -> list[str]:
        self.batches.append(list(items))
        self.started.set()
        await self.gate.wait()
        if self.fail_on.intersection(items):
            raise RuntimeError(f"batch {items} failed")
        refused = {
            i: InvalidRequest("item", f"{item} is refused")
            for i, item in enumerate(items)
            if item in self.refuse
        }
        if refused:
            raise RejectedItems(refused)
        return [f"row-{i}" for i in items]


async def test_lone_submit_is_flushed_at_once() -> None:
    store = Store()
    batcher: Batcher[int, str] = Batcher(store.flush)
    assert await asyncio.wait_for(batcher.submit(1), timeout=1) == "row-1"
    assert store.batches == [[1]]


async def test_submit_many_returns_results_in_order() -> None:
    store = Store()
    batcher: Batcher[int, str] = Batcher(store.flush)
    assert await batcher.submit_many([3, 1, 2]) == ["row-3", "row-1", "row-2"]
    assert store.batches == [[3, 1, 2]]


async def test_submit_many_of_nothing_returns_nothing() -> None:
    store = Store()
    batcher: Batcher[int, str] = Batcher(store.flush)
    assert await asyncio.wait_for(batcher.submit_many([]), timeout=1) == []
    assert await batcher.submit(4) == "row-4"


async def test_concurrent_submits_during_a_slow_flush_are_coalesced() -> None:
    store = Store()
    store.gate.clear()
    batcher: Batcher[int, str] = Batcher(store.flush)
    first = asyncio.create_task(batcher.submit(0))
    await store.started.wait()  # the first flush is now in flight and slow
    rest = [asyncio.create_task(batcher.submit(i)) for i in range(1, 100)]
    await asyncio.sleep(0.01)
    store.gate.set()
    results = await asyncio.wait_for(asyncio.gather(first, *rest), timeout=2)
    assert results == [f"row-{i}" for i in range(100)]
    assert len(store.batches) <= 2
    assert [i for batch in store.batches for i in batch] == list(range(100))


async def test_concurrent_submits_in_one_tick_share_one_flush() -> None:
    store = Store()
    batcher: Batcher[int, str] = Batcher(store.flush)
    results = await asyncio.gather(*(batcher.submit(i) for i in range(50)))
    assert results == [f"row-{i}" for i in range(50)]
    assert store.batches == [list(range(50))]


async def test_max_batch_splits_large_backlogs() -> None:
    store = Store()
    batcher: Batcher[int, str] = Batcher(store.flush, max_batch=3)
    results = await asyncio.gather(*(batcher.submit(i) for i in range(7)))
    assert results == [f"row-{i}" for i in range(7)]
    assert store.batches == [[0, 1, 2], [3, 4, 5], [6]]


async def test_one_submit_many_is_never_split_so_it_commits_whole() -> None:
    store = Store()
    batcher: Batcher[int, str] = Batcher(store.flush, max_batch=4)
    assert await batcher.submit_many(list(range(10))) == [f"row-{i}" for i in range(10)]
    assert [len(batch) for batch in store.batches] == [10]


async def test_max_batch_groups_whole_submissions() -> None:
    store = Store()
    store.gate.clear()
    batcher: Batcher[int, str] = Batcher(store.flush, max_batch=4)
    first = asyncio.create_task(batcher.submit(0))
    await asyncio.sleep(0)  # the first flush starts and waits at the gate
    groups = [[1, 2], [3, 4], [5], [6, 7, 8, 9, 10]]
    rest = [asyncio.create_task(batcher.submit_many(g)) for g in groups]
    await asyncio.sleep(0)
    store.gate.set()
    assert await first == "row-0"
    assert [await t for t in rest] == [[f"row-{i}" for i in g] for g in groups]
    assert store.batches == [[0], [1, 2, 3, 4], [5], [6, 7, 8, 9, 10]]


async def test_a_failed_flush_reaches_exactly_its_own_callers() -> None:
    store = Store()
    store.gate.clear()
    store.fail_on = {1}
    batcher: Batcher[int, str] = Batcher(store.flush, max_batch=2)
    tasks = [asyncio.create_task(batcher.submit(i)) for i in range(5)]
    await asyncio.sleep(0)
    store.gate.set()
    results = await asyncio.wait_for(asyncio.gather(*tasks, return_exceptions=True), timeout=2)
    assert store.batches == [[0, 1], [2, 3], [4]]
    failure = results[0]
    assert isinstance(failure, RuntimeError)
    assert str(failure) == "batch [0, 1] failed"
    assert results[1] is failure
    assert results[2:] == ["row-2", "row-3", "row-4"]


async def test_batches_after_a_failure_still_work() -> None:
    store = Store()
    store.fail_on = {13}
    batcher: Batcher[int, str] = Batcher(store.flush)
    with pytest.raises(RuntimeError, match=r"batch \[13\] failed"):
        await batcher.submit(13)
    assert await asyncio.wait_for(batcher.submit(14), timeout=1) == "row-14"
    assert await batcher.submit_many([15, 16]) == ["row-15", "row-16"]


async def test_a_failure_while_others_queue_up_spares_the_queued() -> None:
    store = Store()
    store.gate.clear()
    store.fail_on = {0}
    batcher: Batcher[int, str] = Batcher(store.flush)
    doomed = asyncio.create_task(batcher.submit(0))
    await store.started.wait()
    queued = [asyncio.create_task(batcher.submit(i)) for i in (1, 2)]
    await asyncio.sleep(0)
    store.gate.set()
    with pytest.raises(RuntimeError):
        await doomed
    assert await asyncio.wait_for(asyncio.gather(*queued), timeout=1) == ["row-1", "row-2"]


@pytest.mark.parametrize(
    ("refuse", "batches"),
    [
        pytest.param(set(), [[0, 1, 2]], id="its-item-accepted"),
        # Its refused item fails the flush; the others are flushed again, not left waiting.
        pytest.param({1}, [[0, 1, 2], [0, 2]], id="its-item-refused"),
    ],
)
async def test_a_cancelled_caller_does_not_spoil_its_batch(
    refuse: set[int], batches: list[list[int]]
) -> None:
    store = Store()
    store.gate.clear()
    store.refuse = refuse
    batcher: Batcher[int, str] = Batcher(store.flush)
    tasks = [asyncio.create_task(batcher.submit(i)) for i in range(3)]
    await store.started.wait()
    tasks[1].cancel()
    await asyncio.sleep(0)
    store.gate.set()
    assert await asyncio.wait_for(tasks[0], timeout=1) == "row-0"
    assert await asyncio.wait_for(tasks[2], timeout=1) == "row-2"
    assert tasks[1].cancelled()
    assert store.batches == batches
    assert await asyncio.wait_for(batcher.submit(3), timeout=1) == "row-3"
