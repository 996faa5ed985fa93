"""The ready-queue contract, run against every backend (memory, Redis).

Priority order, FIFO within a priority, waiting pulls, cancellation, depth; and what
several handles on one shared queue (two nodes on one Redis) must keep: each item
leaves exactly once, and a push through one handle wakes a pull waiting on another.
"""

from __future__ import annotations

import asyncio
import itertools
import time
import uuid
from collections.abc import AsyncIterator, Callable
from contextlib import AbstractAsyncContextManager, asynccontextmanager

import pytest
import services
from hypothesis import given, settings
from hypothesis import strategies as st

from tickwheel.queue.base import ReadyItem, ReadyQueue
from tickwheel.queue.memory import MemoryReadyQueue
from tickwheel.queue.redis import RedisReadyQueue

# Opens another handle on one shared queue, as another node would.
Handles = Callable[[], ReadyQueue]
Opener = Callable[[], AbstractAsyncContextManager[Handles]]


@asynccontextmanager
async def memory_queue() -> AsyncIterator[Handles]:
    shared = MemoryReadyQueue()
    yield lambda: shared


@asynccontextmanager
async def redis_queue(url: str) -> AsyncIterator[Handles]:
    prefix = f"tickwheel-test:{uuid.uuid4().hex}:"  # each queue its own keys
    opened: list[RedisReadyQueue] = []

    def handle() -> ReadyQueue:
        opened.append(RedisReadyQueue.from_url(url, prefix=prefix))
        return opened[-1]

    try:
        yield handle
    finally:
        for queue in opened:
            await queue.close()
        await RedisReadyQueue.wipe(url, prefix)


# Session-scoped so the hypothesis tests, which open a queue per example, can use it.
@pytest.fixture(scope="session", params=["memory", "redis"])
def open_queue(request: pytest.FixtureRequest) -> Opener:
    if request.param == "memory":
        return memory_queue
    url = services.require("redis")
    return lambda: redis_queue(url)


@pytest.fixture
async def handles(open_queue: Opener) -> AsyncIterator[Handles]:
    async with open_queue() as opened:
        yield opened


@pytest.fixture
def ready_queue(handles: Handles) -> ReadyQueue:
    return handles()


_seqs = itertools.count(1)


def item(priority: int = 0, queue: str = "default") -> ReadyItem:
    seq = next(_seqs)
    return ReadyItem(seq=seq, queue=queue, priority=priority, due_ms=seq, triggered_ms=seq)


async def drain(queue: ReadyQueue, names: list[str]) -> list[ReadyItem]:
    return await queue.pull(names, limit=1_000_000, wait_seconds=0)


# --- order ------------------------------------------------------------------


async def test_higher_priority_leaves_first(ready_queue: ReadyQueue) -> None:
    low, high, middle = item(-5), item(10), item(0)
    await ready_queue.push([low, high, middle])
    assert await drain(ready_queue, ["default"]) == [high, middle, low]


async def test_fifo_within_a_priority_across_pushes(ready_queue: ReadyQueue) -> None:
    first, second, third = item(3), item(3), item(3)
    await ready_queue.push([first, second])
    await ready_queue.push([third])
    pulled = [await ready_queue.pull(["default"], limit=1, wait_seconds=0) for _ in range(3)]
    assert pulled == [[first], [second], [third]]


async def test_new_higher_priority_overtakes_items_already_waiting(
    ready_queue: ReadyQueue,
) -> None:
    await ready_queue.push([item(0), item(0)])
    urgent = item(100)
    await ready_queue.push([urgent])
    assert await ready_queue.pull(["default"], limit=1, wait_seconds=0) == [urgent]


@settings(deadline=None)  # a Redis example opens a connection: timing is not the point
@given(
    batches=st.lists(
        st.lists(st.integers(min_value=-100, max_value=100), max_size=8), min_size=1, max_size=6
    ),
    limit=st.integers(min_value=1, max_value=10),
)
def test_pull_order_is_a_stable_sort_by_priority(
    open_queue: Opener, batches: list[list[int]], limit: int
) -> None:
    async def scenario() -> None:
        async with open_queue() as handles:
            queue = handles()
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


@settings(deadline=None)
@given(
    pushed=st.lists(
        st.tuples(st.sampled_from(["a", "b", "c"]), st.integers(min_value=-3, max_value=3)),
        max_size=30,
    ),
    limit=st.integers(min_value=1, max_value=7),
)
def test_pull_over_several_queues_keeps_priority_and_per_queue_fifo(
    open_queue: Opener, pushed: list[tuple[str, int]], limit: int
) -> None:
    async def scenario() -> None:
        async with open_queue() as handles:
            queue = handles()
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


async def test_pull_picks_the_highest_priority_head_across_queues(ready_queue: ReadyQueue) -> None:
    a_low = [item(1, "a"), item(1, "a")]
    b_high = item(9, "b")
    c_mid = item(5, "c")
    await ready_queue.push([*a_low, b_high, c_mid])
    assert await ready_queue.pull(["a", "b", "c"], limit=1, wait_seconds=0) == [b_high]
    assert await ready_queue.pull(["a", "c"], limit=1, wait_seconds=0) == [c_mid]
    assert await ready_queue.pull(["a", "b", "c"], limit=5, wait_seconds=0) == a_low


async def test_pull_mixes_queues_within_one_limit_by_priority(ready_queue: ReadyQueue) -> None:
    a_items = [item(5, "a"), item(1, "a")]
    b_items = [item(3, "b"), item(0, "b")]
    await ready_queue.push([*a_items, *b_items])
    pulled = await ready_queue.pull(["a", "b"], limit=3, wait_seconds=0)
    assert pulled == [a_items[0], b_items[0], a_items[1]]
    assert ready_queue.depth() == {"a": 0, "b": 1}


async def test_pull_leaves_queues_it_was_not_asked_for(ready_queue: ReadyQueue) -> None:
    other = item(100, "other")
    mine = item(0, "mine")
    await ready_queue.push([other, mine])
    assert await ready_queue.pull(["mine", "unknown"], limit=10, wait_seconds=0) == [mine]
    assert ready_queue.depth() == {"other": 1, "mine": 0}


async def test_pull_of_unknown_queues_is_empty(ready_queue: ReadyQueue) -> None:
    assert await ready_queue.pull(["nobody"], limit=10, wait_seconds=0) == []
    assert await ready_queue.pull([], limit=10, wait_seconds=0) == []


async def test_queue_names_are_opaque(ready_queue: ReadyQueue) -> None:
    # Names that look like key separators or priorities must not share a lane.
    names = ["a", "a:1", "a:1:2", "1", "lane:a", "ü ✓", ""]
    items = {name: [item(1, name), item(2, name)] for name in names}
    await ready_queue.push([one for lane in items.values() for one in lane])
    for name in names:
        assert await drain(ready_queue, [name]) == items[name][::-1]


async def test_naming_a_queue_twice_pulls_each_item_once(ready_queue: ReadyQueue) -> None:
    items = [item(0), item(1), item(0)]
    await ready_queue.push(items)
    assert await drain(ready_queue, ["default", "default"]) == [items[1], items[0], items[2]]


async def test_a_big_batch_keeps_its_order(ready_queue: ReadyQueue) -> None:
    # Bigger than any per-call chunk or argument bound a backend might have.
    items = [item(i % 2) for i in range(20_000)]
    await ready_queue.push(items)
    assert await drain(ready_queue, ["default"]) == items[1::2] + items[0::2]


# --- limit and depth ----------------------------------------------------------


async def test_limit_is_respected_across_priorities(ready_queue: ReadyQueue) -> None:
    items = [item(5), item(5), item(0), item(0), item(0), item(-1)]
    await ready_queue.push(items)
    assert await ready_queue.pull(["default"], limit=3, wait_seconds=0) == items[:3]
    assert await ready_queue.pull(["default"], limit=2, wait_seconds=0) == items[3:5]
    assert await ready_queue.pull(["default"], limit=2, wait_seconds=0) == items[5:]


async def test_depth_counts_per_queue(ready_queue: ReadyQueue) -> None:
    assert ready_queue.depth() == {}
    await ready_queue.push([item(0, "a"), item(3, "a"), item(-2, "a"), item(1, "b")])
    assert ready_queue.depth() == {"a": 3, "b": 1}
    await ready_queue.pull(["a"], limit=2, wait_seconds=0)
    assert ready_queue.depth() == {"a": 1, "b": 1}
    await ready_queue.push([item(0, "c")])
    assert ready_queue.depth() == {"a": 1, "b": 1, "c": 1}


async def test_empty_push_changes_nothing(ready_queue: ReadyQueue) -> None:
    await ready_queue.push([])
    assert ready_queue.depth() == {}
    assert await ready_queue.pull(["default"], limit=1, wait_seconds=0) == []


# --- waiting ------------------------------------------------------------------


async def test_waiting_pull_returns_as_soon_as_an_item_arrives(ready_queue: ReadyQueue) -> None:
    arriving = item(0)
    loop = asyncio.get_running_loop()

    async def push_later() -> None:
        await asyncio.sleep(0.05)
        await ready_queue.push([arriving])

    pusher = asyncio.create_task(push_later())
    started = loop.time()
    pulled = await ready_queue.pull(["default"], limit=10, wait_seconds=5)
    elapsed = loop.time() - started
    await pusher
    assert pulled == [arriving]
    assert 0.04 <= elapsed < 1.0


async def test_waiting_pull_ignores_pushes_to_other_queues(ready_queue: ReadyQueue) -> None:
    elsewhere, mine = item(0, "other"), item(0, "mine")
    loop = asyncio.get_running_loop()

    async def pushes() -> None:
        await asyncio.sleep(0.02)
        await ready_queue.push([elsewhere])
        await asyncio.sleep(0.1)
        await ready_queue.push([mine])

    pusher = asyncio.create_task(pushes())
    started = loop.time()
    pulled = await ready_queue.pull(["mine"], limit=10, wait_seconds=5)
    elapsed = loop.time() - started
    await pusher
    assert pulled == [mine]  # not woken into an early empty answer by the other queue
    assert 0.1 <= elapsed < 1.0
    assert ready_queue.depth() == {"other": 1, "mine": 0}


async def test_empty_pull_returns_nothing_after_its_wait(ready_queue: ReadyQueue) -> None:
    loop = asyncio.get_running_loop()
    started = loop.time()
    assert await ready_queue.pull(["default"], limit=10, wait_seconds=0.1) == []
    elapsed = loop.time() - started
    assert 0.09 <= elapsed < 1.0


async def test_one_item_goes_to_exactly_one_of_two_waiting_pullers(
    ready_queue: ReadyQueue,
) -> None:
    pullers = [
        asyncio.create_task(ready_queue.pull(["default"], limit=10, wait_seconds=0.2))
        for _ in range(2)
    ]
    await asyncio.sleep(0.01)
    only = item(0)
    await ready_queue.push([only])
    results = await asyncio.gather(*pullers)
    assert sorted(results, key=len) == [[], [only]]


async def test_two_waiting_pullers_each_get_one_of_two_items_quickly(
    ready_queue: ReadyQueue,
) -> None:
    loop = asyncio.get_running_loop()
    pullers = [
        asyncio.create_task(ready_queue.pull(["default"], limit=1, wait_seconds=5))
        for _ in range(2)
    ]
    await asyncio.sleep(0.01)
    started = loop.time()
    pushed = [item(0), item(0)]
    await ready_queue.push(pushed)
    results = await asyncio.gather(*pullers)
    assert loop.time() - started < 1.0
    assert sorted(one for chunk in results for one in chunk) == sorted(pushed)
    assert [len(chunk) for chunk in results] == [1, 1]


async def test_cancelling_a_waiting_pull_propagates(ready_queue: ReadyQueue) -> None:
    puller = asyncio.create_task(ready_queue.pull(["default"], limit=10, wait_seconds=5))
    await asyncio.sleep(0.01)
    puller.cancel()
    with pytest.raises(asyncio.CancelledError):
        await puller
    assert puller.cancelled()
    late = item(0)
    await ready_queue.push([late])  # nothing is lost to the cancelled pull
    assert await ready_queue.pull(["default"], limit=10, wait_seconds=0) == [late]


async def test_cancelling_a_pull_as_its_item_arrives_loses_nothing(
    ready_queue: ReadyQueue,
) -> None:
    puller = asyncio.create_task(ready_queue.pull(["default"], limit=10, wait_seconds=5))
    await asyncio.sleep(0.01)
    arriving = item(0)
    await ready_queue.push([arriving])  # wakes the puller ...
    puller.cancel()  # ... which is cancelled before it runs again
    with pytest.raises(asyncio.CancelledError):
        await puller
    assert puller.cancelled()
    assert await ready_queue.pull(["default"], limit=10, wait_seconds=0) == [arriving]


@pytest.mark.parametrize("wait_seconds", [0, 5])
async def test_cancelling_a_pull_at_any_moment_loses_nothing_and_keeps_order(
    ready_queue: ReadyQueue, wait_seconds: float
) -> None:
    # Cancelled before, during or after taking its items: what it did not return is
    # still queued, in its place (ahead of the third item of its lane).
    for steps in range(30):
        pushed = [item(1), item(1), item(1), item(0)]
        await ready_queue.push(pushed)
        puller = asyncio.create_task(
            ready_queue.pull(["default"], limit=2, wait_seconds=wait_seconds)
        )
        for _ in range(steps):
            await asyncio.sleep(0)
        puller.cancel()
        try:
            pulled = await puller
        except asyncio.CancelledError:
            pulled = []
        assert pulled + await drain(ready_queue, ["default"]) == pushed
    assert ready_queue.depth() == {"default": 0}


async def test_items_put_back_leave_first_in_their_order(ready_queue: ReadyQueue) -> None:
    low = [item(0), item(0), item(0)]
    high = item(5)
    await ready_queue.push([*low, high])
    pulled = await ready_queue.pull(["default"], limit=3, wait_seconds=0)
    assert pulled == [high, low[0], low[1]]
    await ready_queue.put_back([high, low[1]])  # low[0] was taken
    assert ready_queue.depth() == {"default": 3}
    assert await drain(ready_queue, ["default"]) == [high, low[1], low[2]]


async def test_items_put_back_wake_a_waiting_pull(ready_queue: ReadyQueue) -> None:
    await ready_queue.push([item(0)])
    (held,) = await ready_queue.pull(["default"], limit=1, wait_seconds=0)
    waiting = asyncio.create_task(ready_queue.pull(["default"], limit=1, wait_seconds=5))
    await asyncio.sleep(0.05)
    loop = asyncio.get_running_loop()
    started = loop.time()
    await ready_queue.put_back([held])
    assert await waiting == [held]
    assert loop.time() - started < 1.0


# --- several handles on one queue (several nodes) ------------------------------


async def test_a_push_through_one_handle_wakes_a_pull_waiting_on_another(
    handles: Handles,
) -> None:
    pusher, puller = handles(), handles()
    loop = asyncio.get_running_loop()
    waiting = asyncio.create_task(puller.pull(["default"], limit=10, wait_seconds=5))
    await asyncio.sleep(0.05)
    arriving = item(0)
    started = loop.time()
    await pusher.push([arriving])
    assert await waiting == [arriving]
    assert loop.time() - started < 1.0


async def test_pullers_on_several_handles_get_each_item_exactly_once(handles: Handles) -> None:
    queues = [handles() for _ in range(3)]
    pushed = [item(n % 3) for n in range(600)]

    async def pull_until_idle(queue: ReadyQueue) -> list[ReadyItem]:
        got: list[ReadyItem] = []
        while chunk := await queue.pull(["default"], limit=7, wait_seconds=0.3):
            got.extend(chunk)
        return got

    pullers = [asyncio.create_task(pull_until_idle(q)) for q in queues for _ in range(2)]
    for start in range(0, len(pushed), 50):
        await queues[start % 3].push(pushed[start : start + 50])
        await asyncio.sleep(0.001)
    results = await asyncio.gather(*pullers)
    assert sorted(one for got in results for one in got) == sorted(pushed)


async def test_fresh_depth_counts_what_waits_now(ready_queue: ReadyQueue) -> None:
    await ready_queue.push([item(queue="a"), item(queue="a"), item(queue="b")])
    assert await ready_queue.fresh_depth() == {"a": 2, "b": 1}
    await ready_queue.pull(["a"], limit=5, wait_seconds=0)
    assert (await ready_queue.fresh_depth()).get("a", 0) == 0


async def test_oldest_release_is_the_earliest_stamp_at_the_lane_heads(
    ready_queue: ReadyQueue,
) -> None:
    def stamped(at: int, priority: int, queue: str = "a") -> ReadyItem:
        return ReadyItem(seq=at, queue=queue, priority=priority, due_ms=at, triggered_ms=at)

    await ready_queue.push([stamped(30, 0), stamped(40, 0), stamped(10, 5), stamped(50, 1, "b")])
    assert await ready_queue.oldest_release(["a", "b", "c"]) == {"a": 10, "b": 50}
    await ready_queue.pull(["a"], limit=1, wait_seconds=0)  # the priority-5 item leaves
    assert await ready_queue.oldest_release(["a"]) == {"a": 30}
    await ready_queue.pull(["a", "b"], limit=10, wait_seconds=0)
    assert await ready_queue.oldest_release(["a", "b"]) == {}


# --- staging ahead of the due time ----------------------------------------------


def wall_ms() -> int:
    return time.time_ns() // 1_000_000


def due_at(due_ms: int, priority: int = 0, queue: str = "default") -> ReadyItem:
    return ReadyItem(
        seq=next(_seqs), queue=queue, priority=priority, due_ms=due_ms, triggered_ms=due_ms
    )


async def test_a_staged_item_stays_hidden_until_due(ready_queue: ReadyQueue) -> None:
    staged = due_at(wall_ms() + 60_000)
    await ready_queue.stage([staged])
    assert await ready_queue.pull(["default"], limit=10, wait_seconds=0) == []
    assert ready_queue.depth() == {"default": 1}
    assert await ready_queue.fresh_depth() == {"default": 1}


@pytest.mark.parametrize("backend", ["memory", "redis"])
async def test_a_staged_item_falls_due_by_the_clock_the_queue_is_given(backend: str) -> None:
    """Every node passes the cluster's clock: neither this host's nor Redis's decides."""
    shifted = wall_ms() + 3_600_000  # a cluster clock an hour ahead of this host
    url, prefix = services.require("redis"), f"tickwheel-test:{uuid.uuid4().hex}:"
    queue: ReadyQueue = (
        MemoryReadyQueue(now_ms=lambda: shifted)
        if backend == "memory"
        else RedisReadyQueue.from_url(url, prefix=prefix, now_ms=lambda: shifted)
    )
    try:
        soon, later = due_at(shifted - 1), due_at(shifted + 1)
        await queue.stage([soon, later])
        assert await queue.pull(["default"], limit=10, wait_seconds=0) == [soon]
    finally:
        await queue.close()
        await RedisReadyQueue.wipe(url, prefix)


async def test_a_waiting_pull_gets_a_staged_item_when_due_and_not_before(
    ready_queue: ReadyQueue,
) -> None:
    staged = due_at(wall_ms() + 300)
    await ready_queue.stage([staged])
    got = await ready_queue.pull(["default"], limit=10, wait_seconds=5)
    assert got == [staged]
    assert wall_ms() >= staged.due_ms


async def test_a_pull_waiting_before_the_stage_wakes_for_it(ready_queue: ReadyQueue) -> None:
    staged = due_at(wall_ms() + 200)

    async def stage_later() -> None:
        await asyncio.sleep(0.05)
        await ready_queue.stage([staged])

    stager = asyncio.create_task(stage_later())
    loop = asyncio.get_running_loop()
    started = loop.time()
    assert await ready_queue.pull(["default"], limit=10, wait_seconds=5) == [staged]
    assert loop.time() - started < 4  # woken by the due time, not by the end of the wait
    await stager


async def test_staged_items_leave_in_due_order_after_those_already_pushed(
    ready_queue: ReadyQueue,
) -> None:
    now = wall_ms()
    waiting = item()
    await ready_queue.push([waiting])
    staged = [due_at(now - 3000 + i) for i in range(2500)]  # all due already
    await ready_queue.stage(staged[::-1])  # any order in: due order out
    pulled = await drain(ready_queue, ["default"])
    assert pulled == [waiting, *staged]
    assert ready_queue.depth().get("default", 0) == 0


async def test_staged_items_keep_priority_order(ready_queue: ReadyQueue) -> None:
    now = wall_ms()
    low, high = due_at(now - 10, priority=-5), due_at(now - 5, priority=7)
    later = due_at(now + 60_000, priority=9)
    await ready_queue.stage([low, high, later])
    assert await ready_queue.pull(["default"], limit=10, wait_seconds=0) == [high, low]


async def test_oldest_release_counts_staged_heads(ready_queue: ReadyQueue) -> None:
    future = wall_ms() + 60_000
    await ready_queue.stage([due_at(future + 5, queue="a"), due_at(future, queue="a")])
    assert await ready_queue.oldest_release(["a"]) == {"a": future}


# --- loss ---------------------------------------------------------------------


async def test_a_queue_that_kept_its_items_was_not_wiped(handles: Handles) -> None:
    one, other = handles(), handles()
    assert not await one.wiped()  # the first call notes what the queue holds
    await one.push([item()])
    assert not await one.wiped()
    assert not await other.wiped()
    assert not await one.wiped()


async def test_every_handle_learns_once_that_redis_lost_the_queue() -> None:
    async with redis_queue(services.require("redis")) as handles:
        one, other = handles(), handles()
        assert not await one.wiped()
        assert not await other.wiped()
        await one.push([item()])
        assert isinstance(one, RedisReadyQueue)
        await one.clear()  # as a Redis restarted empty would

        assert await other.wiped()  # it set a new marker: the first handle sees it too
        assert await one.wiped()
        assert not await one.wiped()
        assert not await other.wiped()
