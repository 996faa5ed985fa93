"""Tasks that wait on others: B runs only after A succeeds, at any width and depth."""

from __future__ import annotations

import asyncio
import time
from collections import Counter
from collections.abc import AsyncIterator
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest

from tickwheel import App, InvalidRequest, PermanentFailure, TaskContext
from tickwheel.clock import SystemClock
from tickwheel.config import Settings
from tickwheel.engine import attempts
from tickwheel.models import NewTask, ScheduleType, Status
from tickwheel.node import Node
from tickwheel.storage.base import TaskFilter
from tickwheel.storage.sqlite.store import SqliteStore

FINAL = {Status.SUCCEEDED, Status.FAILED, Status.CANCELLED, Status.UPSTREAM_FAILED}


class Runs:
    """What the handlers did: how often each task ran, and in what order."""

    def __init__(self) -> None:
        self.count: Counter[str] = Counter()
        self.order: list[str] = []


@pytest.fixture
def runs() -> Runs:
    return Runs()


@pytest.fixture
async def node(tmp_path: Path, runs: Runs) -> AsyncIterator[Node]:
    app = App()

    @app.task("step")
    async def step(ctx: TaskContext, payload: Any) -> None:
        runs.count[ctx.task_id] += 1
        runs.order.append(payload)

    @app.task("boom", max_retries=0)
    async def boom(ctx: TaskContext, payload: Any) -> None:
        runs.count[ctx.task_id] += 1
        raise PermanentFailure("it broke")

    @app.task("flaky", max_retries=2, retry_backoff=(0.05, 0.05))
    async def flaky(ctx: TaskContext, payload: Any) -> None:
        runs.count[ctx.task_id] += 1
        if ctx.attempt == 1:
            raise RuntimeError("first attempt fails")
        runs.order.append(payload)

    settings = Settings(database_url=f"sqlite:///{tmp_path / 'dag.db'}", concurrency=32)
    async with Node(settings=settings, app=app) as started:
        yield started


async def status(node: Node, task_id: str) -> Status:
    return (await node.service.get(task_id)).status


async def settle(node: Node, *task_ids: str, timeout: float = 30) -> dict[str, Status]:
    """Each task's status once every one is final."""
    deadline = time.monotonic() + timeout
    while True:
        found = {t: await status(node, t) for t in task_ids}
        if all(s in FINAL for s in found.values()) or time.monotonic() > deadline:
            return found
        await asyncio.sleep(0.02)


async def test_a_diamond_runs_in_order(node: Node, runs: Runs) -> None:
    a = (await node.submit("step", "a", delay_seconds=0.3)).task_id
    b = (await node.submit("step", "b", dependencies=[a])).task_id
    c = (await node.submit("step", "c", dependencies=[a])).task_id
    d = (await node.submit("step", "d", dependencies=[b, c])).task_id
    assert [await status(node, t) for t in (b, c, d)] == [Status.BLOCKED] * 3

    assert set((await settle(node, a, b, c, d)).values()) == {Status.SUCCEEDED}
    assert runs.order[0] == "a" and runs.order[-1] == "d"
    assert sorted(runs.order[1:3]) == ["b", "c"]
    assert set(runs.count.values()) == {1}
    records = {t: (await node.service.get(t)).record for t in (a, b, c, d)}
    ended = {t: r.completed_ms for t, r in records.items() if r}
    started = {t: r.started_ms for t, r in records.items() if r}
    assert started[b] >= ended[a] and started[c] >= ended[a]  # type: ignore[operator]
    assert started[d] >= max(ended[b], ended[c])  # type: ignore[operator,type-var]


async def test_dependencies_on_finished_tasks_are_settled_at_once(node: Node) -> None:
    done = (await node.submit("step", "done")).task_id
    broken = (await node.submit("boom")).task_id
    await settle(node, done, broken)

    after_done = (await node.submit("step", "x", dependencies=[done])).task_id
    after_broken = await node.submit("step", "y", dependencies=[broken])
    assert after_broken.status is Status.UPSTREAM_FAILED  # the answer is as stored
    assert await status(node, after_broken.task_id) is Status.UPSTREAM_FAILED
    assert (await settle(node, after_done))[after_done] is Status.SUCCEEDED


async def test_an_unknown_dependency_is_rejected_and_nothing_stored(node: Node) -> None:
    known = (await node.submit("step", delay_seconds=60)).task_id
    with pytest.raises(InvalidRequest) as invalid:
        await node.submit("step", dependencies=[known, "no-such-task"])
    assert invalid.value.field == "dependencies"
    assert "no-such-task" in invalid.value.reason
    page, _ = await node.service.list_tasks(TaskFilter(), before_seq=None, limit=10)
    assert [v.task_id for v in page] == [known]


async def test_failure_propagates_through_every_level(node: Node, runs: Runs) -> None:
    root = (await node.submit("boom", delay_seconds=0.2)).task_id
    chain = [root]
    for level in range(4):
        chain.append((await node.submit("step", level, dependencies=[chain[-1]])).task_id)
    side = (await node.submit("step", "side", dependencies=[chain[2]])).task_id

    final = await settle(node, *chain, side)
    assert final[root] is Status.FAILED
    assert {final[t] for t in [*chain[1:], side]} == {Status.UPSTREAM_FAILED}
    assert runs.order == []  # no dependent ran
    view = await node.service.get(chain[1])
    assert view.record is not None and root in (view.record.last_error or "")


async def test_a_retry_that_succeeds_unblocks_normally(node: Node, runs: Runs) -> None:
    flaky = (await node.submit("flaky", "flaky")).task_id
    after = (await node.submit("step", "after", dependencies=[flaky])).task_id
    assert (await settle(node, flaky, after)) == {
        flaky: Status.SUCCEEDED,
        after: Status.SUCCEEDED,
    }
    assert runs.count[flaky] == 2
    assert runs.order == ["flaky", "after"]


async def test_cancelling_a_predecessor_fails_its_dependents(node: Node, runs: Runs) -> None:
    first = (await node.submit("step", delay_seconds=3600)).task_id
    second = (await node.submit("step", dependencies=[first])).task_id
    third = (await node.submit("step", dependencies=[second])).task_id
    await node.service.cancel(first)
    assert (await settle(node, second, third)) == {
        second: Status.UPSTREAM_FAILED,
        third: Status.UPSTREAM_FAILED,
    }
    assert runs.order == []


async def test_a_blocked_task_can_be_cancelled(node: Node, runs: Runs) -> None:
    first = (await node.submit("step", "first", delay_seconds=0.3)).task_id
    second = (await node.submit("step", "second", dependencies=[first])).task_id
    assert await node.service.cancel(second) == 1
    assert (await settle(node, first, second)) == {
        first: Status.SUCCEEDED,
        second: Status.CANCELLED,
    }
    assert runs.order == ["first"]


async def test_fan_out_of_1000(node: Node, runs: Runs) -> None:
    root = (await node.submit("step", "root", delay_seconds=0.5)).task_id
    leaves = [
        s.task_id
        for s in await asyncio.gather(
            *(node.submit("step", i, dependencies=[root]) for i in range(1000))
        )
    ]
    final = await settle(node, root, *leaves, timeout=60)
    assert set(final.values()) == {Status.SUCCEEDED}
    assert runs.order[0] == "root" and len(runs.order) == 1001
    assert set(runs.count.values()) == {1}


async def test_fan_in_of_1000_runs_the_dependent_once(node: Node, runs: Runs) -> None:
    """1,000 predecessors ending at about the same moment: the counter reaches its total
    exactly once, and the dependent runs once, after all of them."""
    roots = [
        s.task_id
        for s in await asyncio.gather(
            *(node.submit("step", i, delay_seconds=0.5) for i in range(1000))
        )
    ]
    last = (await node.submit("step", "last", dependencies=roots)).task_id
    final = await settle(node, last, *roots, timeout=60)
    assert set(final.values()) == {Status.SUCCEEDED}
    assert runs.order[-1] == "last" and runs.count[last] == 1


async def test_a_chain_of_1000(node: Node, runs: Runs) -> None:
    previous = (await node.submit("step", 0, delay_seconds=1)).task_id
    chain = [previous]
    for i in range(1, 1000):
        previous = (await node.submit("step", i, dependencies=[previous])).task_id
        chain.append(previous)
    final = await settle(node, chain[-1], timeout=120)
    assert final[chain[-1]] is Status.SUCCEEDED
    assert runs.order == list(range(1000))


async def test_an_end_not_yet_told_to_its_dependents_is_told_on_restart(
    tmp_path: Path, runs: Runs
) -> None:
    """The state a crash leaves between a predecessor's end and its propagation: the
    end is committed with its news queued. A node started on the file tells it."""
    path = tmp_path / "crash.db"
    store = SqliteStore(str(path), partitions=16)
    await store.open()
    now = SystemClock().now_ms()
    first = NewTask("first", 0, "step", "first", ScheduleType.IMMEDIATE, now, now)
    second = replace(first, task_id="second", payload="second", predecessors=("first",))
    seq, _ = await store.insert_tasks([first, second])
    (claimed,) = await store.claim([(seq, now)], now_ms=now, lease_ms=30_000, worker_id="gone")
    assert await store.finish([attempts.succeeded(seq, claimed.fence, now)]) == [True]
    assert await store.has_propagations(now)
    await store.close()  # the process dies here

    app = App()

    @app.task("step")
    async def step(ctx: TaskContext, payload: Any) -> None:
        runs.order.append(payload)

    async with Node(settings=Settings(database_url=f"sqlite:///{path}"), app=app) as node:
        assert (await settle(node, "second"))["second"] is Status.SUCCEEDED
    assert runs.order == ["second"]
