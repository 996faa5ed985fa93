"""The store contract for expiry: a task not started by its `expires_at` ends `expired`.

Claims refuse it from its expiry on; `expire_unstarted` ends it, whatever it waited on
(its due time, an ordering key, its dependencies), and its end is told like any other.
"""

from __future__ import annotations

from dataclasses import replace

from test_store import (
    DAY,
    LEASE,
    T0,
    a_schedule,
    after,
    claim,
    claim_all,
    claimed_of,
    get,
    in_line,
    instance,
    new_task,
    statuses,
    success,
)

from tickwheel.models import NewTask, Status
from tickwheel.storage.base import Advance, Store

ALL = list(range(8))


def expiring(task: NewTask, at: int) -> NewTask:
    return replace(task, expires_ms=at)


async def expire(store: Store, now: int, partitions: list[int] = ALL) -> list[str]:
    ended = await store.expire_unstarted(partitions, now_ms=now, limit=100)
    return sorted(t.task_id for t in ended)


async def test_expires_at_round_trips(store: Store) -> None:
    (seq,) = await store.insert_tasks([expiring(new_task("a"), T0 + 5_000)])
    assert (await get(store, seq)).expires_ms == T0 + 5_000
    (plain,) = await store.insert_tasks([new_task("b")])
    assert (await get(store, plain)).expires_ms is None


async def test_a_claim_refuses_a_task_from_its_expiry_on(store: Store) -> None:
    early, late = await store.insert_tasks(
        [expiring(new_task("early"), T0 + 10), expiring(new_task("late"), T0 + 10)]
    )
    assert (await claim(store, early, now=T0 + 9)).expires_ms == T0 + 10  # before: it runs
    claimed = await store.claim([(late, T0)], now_ms=T0 + 10, lease_ms=LEASE, worker_id="w")
    assert claimed == []
    assert await statuses(store, late) == [Status.PENDING]  # the expiry's scan ends it


async def test_expire_unstarted_ends_only_tasks_past_their_expiry_not_yet_started(
    store: Store,
) -> None:
    due, running, later, never, done = await store.insert_tasks(
        [
            expiring(new_task("due"), T0 + 100),
            expiring(new_task("running"), T0 + 100),
            expiring(new_task("later", due=T0 + 50), T0 + 500),
            new_task("never"),
            expiring(new_task("done"), T0 + 100),
        ]
    )
    await claim(store, running, now=T0 + 1)
    await store.finish([success(await claim(store, done, now=T0 + 1), at=T0 + 2)])

    assert await expire(store, T0 + 99) == []
    assert await expire(store, T0 + 100) == ["task-due"]
    assert await expire(store, T0 + 100) == []  # once
    ended = await get(store, due)
    assert (ended.status, ended.completed_ms) == (Status.EXPIRED, T0 + 100)
    assert ended.attempts == 0 and ended.last_error
    assert await statuses(store, running, later, never, done) == [
        Status.RUNNING,
        Status.PENDING,
        Status.PENDING,
        Status.SUCCEEDED,
    ]
    assert await expire(store, T0 + DAY) == ["task-later"]


async def test_expire_unstarted_keeps_to_the_partitions_and_the_limit(store: Store) -> None:
    await store.insert_tasks([expiring(new_task(i, partition=i % 2), T0 + i) for i in range(6)])
    assert await expire(store, T0 + DAY, [1]) == ["task-1", "task-3", "task-5"]
    first = await store.expire_unstarted([0], now_ms=T0 + DAY, limit=2)
    assert [t.task_id for t in first] == ["task-0", "task-2"]  # earliest expiry first
    assert await expire(store, T0 + DAY, [0]) == ["task-4"]


async def test_an_expired_predecessor_fails_its_dependents(store: Store) -> None:
    _, b = await store.insert_tasks([expiring(new_task("a"), T0 + 10), after("b", "task-a")])
    assert await expire(store, T0 + 10) == ["task-a"]
    assert await store.propagate(T0 + 11) == (0, 1, False)
    dependent = await get(store, b)
    assert dependent.status is Status.UPSTREAM_FAILED
    assert "expired" in (dependent.last_error or "")


async def test_a_blocked_task_expires_and_its_predecessor_still_ends_well(store: Store) -> None:
    a, b = await store.insert_tasks([new_task("a"), expiring(after("b", "task-a"), T0 + 10)])
    assert await expire(store, T0 + 10) == ["task-b"]
    await store.finish([success(await claim(store, a, now=T0 + 11), at=T0 + 12)])
    assert await store.propagate(T0 + 13) == (0, 0, False)  # b stays expired
    assert await statuses(store, a, b) == [Status.SUCCEEDED, Status.EXPIRED]


async def test_an_expired_task_of_an_ordering_key_passes_the_turn_on(store: Store) -> None:
    first, second = await store.insert_tasks(
        [in_line("first", due=T0), expiring(in_line("second", due=T0 + 1), T0 + 10)]
    )
    assert await claim_all(store, [first, second], now=T0 + 1) == [first]
    assert await expire(store, T0 + 10) == ["task-second"]  # waiting behind first
    (third,) = await store.insert_tasks([in_line("third", due=T0 + 2)])
    await store.finish([success(claimed_of(await get(store, first)), at=T0 + 12)])
    assert await store.propagate(T0 + 13) == (0, 0, False)  # the key goes to third
    assert await claim_all(store, [third], now=T0 + 14) == [third]


async def test_an_expired_holder_of_an_ordering_key_frees_it(store: Store) -> None:
    holder, nxt = await store.insert_tasks(
        [expiring(in_line("holder", due=T0), T0 + 10), in_line("next", due=T0 + 1)]
    )
    assert await claim_all(store, [holder, nxt], now=T0 + 10) == []  # too late: refused
    assert await expire(store, T0 + 10) == ["task-holder"]
    await store.propagate(T0 + 11)
    assert await claim_all(store, [nxt], now=T0 + 12) == [nxt]


async def test_a_schedules_current_instance_waits_for_its_release_to_expire(
    store: Store,
) -> None:
    schedule = replace(a_schedule(), expires_after_ms=60_000)
    first = expiring(instance(schedule, T0), T0 + 60_000)
    assert await store.insert_schedule(schedule, first) == schedule.schedule_id
    stored = await store.get_schedule(schedule.schedule_id)
    assert stored is not None and stored.expires_after_ms == 60_000
    assert stored.current_seq is not None

    # Not yet released (the scheduler was down): its schedule must still advance past it.
    assert await expire(store, T0 + DAY) == []
    nxt = expiring(instance(stored, T0 + DAY), T0 + DAY + 60_000)
    (seq,) = await store.advance_schedules([Advance(stored, nxt, None, None)])
    assert seq is not None
    assert await expire(store, T0 + DAY) == [first.task_id]
    assert await statuses(store, stored.current_seq, seq) == [Status.EXPIRED, Status.PENDING]
