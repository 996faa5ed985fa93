"""MemoryReadyQueue: priority order, FIFO within a priority, waiting pulls, cancellation."""

from __future__ import annotations

import asyncio
import itertools

import pytest
from hypothesis import given
from hypothesis import strategies as st

from tickwheel.queue.base import ReadyItem
from tickwheel.queue.memory import MemoryReadyQueue

_seqs = itertools.count(1)


def item(priority: int = 0, queue: str = "default") -> ReadyItem:
    seq = next(_seqs)
    return ReadyItem(seq=seq, queue=queue, priority=priority, due_ms=seq, triggered_ms=seq)


async def drain(queue: MemoryReadyQueue, names: list[str]) -> list[ReadyItem]:
    return await queue.pull(names, limit=1_000_000, wait_seconds=0)


# --- order ------------------------------------------------------------------


async def test_higher_priority_leaves_first() -> None:
    queue = MemoryReadyQueue()
    low, high, middle = item(-5), item(10), item(0)
    await queue.push([low, high, middle])
    assert await drain(queue, ["default"]) == [high, middle, low]


async def test_fifo_within_a_priority_across_pushes() -> None:
    queue = MemoryReadyQueue()
    first, second, third = item(3), item(3), item(3)
    await queue.push([first, second])
    await queue.push([third])
    pulled = [await queue.pull(["default"], limit=1, wait_seconds=0) for _ in range(3)]
    assert pulled == [[first], [second], [third]]


async def test_new_higher_priority_overtakes_items_already_waiting() -> None:
    queue = MemoryReadyQueue()
    waiting = [item(0), item(0)]
    await queue.push(waiting)
    urgent = item(100)
    await queue.push([urgent])
    assert await queue.pull(["default"], limit=1, wait_seconds=0) == [urgent]


@given(
    batches=st.lists(
        st.lists(st.integers(min_value=-100, max_value=100), max_size=8), min_size=1, max_size=6
    ),
    limit=st.integers(min_value=1, max_value=10),
)
def test_pull_order_is_a_stable_sort_by_priority(batches: list[list[int]], limit: int) -> None:
    async def scenario() -> None:
        queue = MemoryReadyQueue()
        pushed: list[ReadyItem] = []
        for priorities in batches:
            items = [item(p) for p in priorities]
            pushed.extend(items)
            await queue.push(items)
        pulled: list[ReadyItem] = []
        while chunk := await queue.pull(["default"], limit=limit, wait_seconds=0):
            assert len(chunk) <= limit
            pulled.extend(chunk)
        assert pulled == sorted(pushed, key=lambda i: -i.priority)
        assert queue.depth() == ({"default": 0} if pushed else {})

    asyncio.run(scenario())


@given(
    pushed=st.lists(
        st.tuples(st.sampled_from(["a", "b", "c"]), st.integers(min_value=-3, max_value=3)),
        max_size=30,
    ),
    limit=st.integers(min_value=1, max_value=7),
)
def test_pull_over_several_queues_keeps_priority_and_per_queue_fifo(
    pushed: list[tuple[str, int]], limit: int
) -> None:
    async def scenario() -> None:
        queue = MemoryReadyQueue()
        items = [item(priority, name) for name, priority in pushed]
        for one in items:
            await queue.push([one])
        pulled: list[ReadyItem] = []
        while chunk := await queue.pull(["a", "b", "c"], limit=limit, wait_seconds=0):
            pulled.extend(chunk)
        assert sorted(pulled) == sorted(items)
        assert [i.priority for i in pulled] == sorted((i.priority for i in items), reverse=True)
        for name, priority in itertools.product("abc", range(-3, 4)):
            lane = [i for i in items if (i.queue, i.priority) == (name, priority)]
            assert [i for i in pulled if (i.queue, i.priority) == (name, priority)] == lane

    asyncio.run(scenario())


async def test_pull_picks_the_highest_priority_head_across_queues() -> None:
    queue = MemoryReadyQueue()
    a_low = [item(1, "a"), item(1, "a")]
    b_high = item(9, "b")
    c_mid = item(5, "c")
    await queue.push([*a_low, b_high, c_mid])
    assert await queue.pull(["a", "b", "c"], limit=1, wait_seconds=0) == [b_high]
    assert await queue.pull(["a", "c"], limit=1, wait_seconds=0) == [c_mid]
    assert await queue.pull(["a", "b", "c"], limit=5, wait_seconds=0) == a_low


async def test_pull_mixes_queues_within_one_limit_by_priority() -> None:
    queue = MemoryReadyQueue()
    a_items = [item(5, "a"), item(1, "a")]
    b_items = [item(3, "b"), item(0, "b")]
    await queue.push([*a_items, *b_items])
    pulled = await queue.pull(["a", "b"], limit=3, wait_seconds=0)
    assert pulled == [a_items[0], b_items[0], a_items[1]]
    assert queue.depth() == {"a": 0, "b": 1}


async def test_pull_leaves_queues_it_was_not_asked_for() -> None:
    queue = MemoryReadyQueue()
    other = item(100, "other")
    mine = item(0, "mine")
    await queue.push([other, mine])
    assert await queue.pull(["mine", "unknown"], limit=10, wait_seconds=0) == [mine]
    assert queue.depth() == {"other": 1, "mine": 0}


async def test_pull_of_unknown_queues_is_empty() -> None:
    queue = MemoryReadyQueue()
    assert await queue.pull(["nobody"], limit=10, wait_seconds=0) == []
    assert await queue.pull([], limit=10, wait_seconds=0) == []


# --- limit and depth ----------------------------------------------------------


async def test_limit_is_respected_across_priorities() -> None:
    queue = MemoryReadyQueue()
    items = [item(5), item(5), item(0), item(0), item(0), item(-1)]
    await queue.push(items)
    assert await queue.pull(["default"], limit=3, wait_seconds=0) == items[:3]
    assert await queue.pull(["default"], limit=2, wait_seconds=0) == items[3:5]
    assert await queue.pull(["default"], limit=2, wait_seconds=0) == items[5:]


async def test_depth_counts_per_queue() -> None:
    queue = MemoryReadyQueue()
    assert queue.depth() == {}
    await queue.push([item(0, "a"), item(3, "a"), item(-2, "a"), item(1, "b")])
    assert queue.depth() == {"a": 3, "b": 1}
    await queue.pull(["a"], limit=2, wait_seconds=0)
    assert queue.depth() == {"a": 1, "b": 1}
    await queue.push([item(0, "c")])
    assert queue.depth() == {"a": 1, "b": 1, "c": 1}


async def test_empty_push_changes_nothing() -> None:
    queue = MemoryReadyQueue()
    await queue.push([])
    assert queue.depth() == {}
    assert await queue.pull(["default"], limit=1, wait_seconds=0) == []


# --- waiting ------------------------------------------------------------------


async def test_waiting_pull_returns_as_soon_as_an_item_arrives() -> None:
    queue = MemoryReadyQueue()
    arriving = item(0)
    loop = asyncio.get_running_loop()

    async def push_later() -> None:
        await asyncio.sleep(0.05)
        await queue.push([arriving])

    pusher = asyncio.create_task(push_later())
    started = loop.time()
    pulled = await queue.pull(["default"], limit=10, wait_seconds=5)
    elapsed = loop.time() - started
    await pusher
    assert pulled == [arriving]
    assert 0.04 <= elapsed < 1.0


async def test_waiting_pull_ignores_pushes_to_other_queues() -> None:
    queue = MemoryReadyQueue()
    elsewhere, mine = item(0, "other"), item(0, "mine")
    loop = asyncio.get_running_loop()

    async def pushes() -> None:
        await asyncio.sleep(0.02)
        await queue.push([elsewhere])
        await asyncio.sleep(0.1)
        await queue.push([mine])

    pusher = asyncio.create_task(pushes())
    started = loop.time()
    pulled = await queue.pull(["mine"], limit=10, wait_seconds=5)
    elapsed = loop.time() - started
    await pusher
    assert pulled == [mine]  # not woken into an early empty answer by the other queue
    assert 0.1 <= elapsed < 1.0
    assert queue.depth() == {"other": 1, "mine": 0}


async def test_empty_pull_returns_nothing_after_its_wait() -> None:
    queue = MemoryReadyQueue()
    loop = asyncio.get_running_loop()
    started = loop.time()
    assert await queue.pull(["default"], limit=10, wait_seconds=0.1) == []
    elapsed = loop.time() - started
    assert 0.09 <= elapsed < 1.0


async def test_one_item_goes_to_exactly_one_of_two_waiting_pullers() -> None:
    queue = MemoryReadyQueue()
    pullers = [
        asyncio.create_task(queue.pull(["default"], limit=10, wait_seconds=0.2)) for _ in range(2)
    ]
    await asyncio.sleep(0.01)
    only = item(0)
    await queue.push([only])
    results = await asyncio.gather(*pullers)
    assert sorted(results, key=len) == [[], [only]]


async def test_two_waiting_pullers_each_get_one_of_two_items_quickly() -> None:
    queue = MemoryReadyQueue()
    loop = asyncio.get_running_loop()
    pullers = [
        asyncio.create_task(queue.pull(["default"], limit=1, wait_seconds=5)) for _ in range(2)
    ]
    await asyncio.sleep(0.01)
    started = loop.time()
    pushed = [item(0), item(0)]
    await queue.push(pushed)
    results = await asyncio.gather(*pullers)
    assert loop.time() - started < 1.0
    assert sorted(one for chunk in results for one in chunk) == sorted(pushed)
    assert [len(chunk) for chunk in results] == [1, 1]


async def test_cancelling_a_waiting_pull_propagates() -> None:
    queue = MemoryReadyQueue()
    puller = asyncio.create_task(queue.pull(["default"], limit=10, wait_seconds=5))
    await asyncio.sleep(0.01)
    puller.cancel()
    with pytest.raises(asyncio.CancelledError):
        await puller
    assert puller.cancelled()
    late = item(0)
    await queue.push([late])  # nothing is lost to the cancelled pull
    assert await queue.pull(["default"], limit=10, wait_seconds=0) == [late]


async def test_cancelling_a_pull_as_its_item_arrives_loses_nothing() -> None:
    queue = MemoryReadyQueue()
    puller = asyncio.create_task(queue.pull(["default"], limit=10, wait_seconds=5))
    await asyncio.sleep(0.01)
    arriving = item(0)
    await queue.push([arriving])  # wakes the puller ...
    puller.cancel()  # ... which is cancelled before it runs again
    with pytest.raises(asyncio.CancelledError):
        await puller
    assert puller.cancelled()
    assert await queue.pull(["default"], limit=10, wait_seconds=0) == [arriving]
