"""The store contract for rate and concurrency limits, judged in the claim.

A limit applies to a task type, a queue or a limit key across every claimer; tasks it
holds back stay pending, held by it, until a wake of the limit lets them go (in
priority and due order, as many as it has room for), and the loader takes them again.
"""

from __future__ import annotations

import asyncio
from dataclasses import replace

from test_store import LEASE, T0, get, new_task, retry, success

from tickwheel.core.limits import Limit, Rate, Scope
from tickwheel.models import ClaimedTask, NewTask, Status, TaskOptions
from tickwheel.storage.base import Store

PER_SECOND_3 = Limit(Scope.TASK_TYPE, "mail", rate=Rate(3, 1000))
TWO_AT_ONCE = Limit(Scope.QUEUE, "slow", concurrency=2)
SLACK = 100  # ms for a claim's statements to run: windows go by the store's own clock


def mail(name: object, *, due: int = T0, **changes: object) -> NewTask:
    options = changes.pop("options", TaskOptions())
    task = new_task(name, task_type="mail", due=due, options=options)  # type: ignore[arg-type]
    return replace(task, **changes)  # type: ignore[arg-type]


def slow(name: object, **changes: object) -> NewTask:
    return replace(new_task(name, options=TaskOptions(queue="slow")), **changes)  # type: ignore[arg-type]


async def claim_at(
    store: Store, seqs: list[int], now: int, *, start_now: int | None = None, worker: str = "w"
) -> tuple[list[int], list[int]]:
    """(claimed seqs, deferred seqs)."""
    found = await store.claim_some(
        [(s, now) for s in seqs],
        now_ms=now,
        lease_ms=LEASE,
        worker_id=worker,
        start_now=start_now,
    )
    return sorted(t.seq for t in found.tasks), sorted(found.deferred)


async def claimed_tasks(store: Store, seqs: list[int], now: int) -> list[ClaimedTask]:
    found = await store.claim_some(
        [(s, now) for s in seqs], now_ms=now, lease_ms=LEASE, worker_id="w", start_now=None
    )
    return found.tasks


async def wake_due(store: Store, now: int) -> bool:
    first = await store.first_wake_ms()
    return first is not None and first <= now


async def held_by(store: Store, seqs: list[int]) -> list[str | None]:
    return [(await get(store, s)).held_by for s in seqs]


async def test_limits_round_trip_with_their_use(store: Store) -> None:
    await store.put_limit(PER_SECOND_3, T0)
    await store.put_limit(TWO_AT_ONCE, T0)
    (use_slow, use_mail) = await store.limits_in_use(T0)  # by id
    assert (use_mail.limit, use_slow.limit) == (PER_SECOND_3, TWO_AT_ONCE)
    assert (use_mail.started_in_window, use_mail.running, use_mail.held) == (0, 0, 0)
    changed = Limit(Scope.TASK_TYPE, "mail", rate=Rate(5, 60_000), concurrency=4)
    await store.put_limit(changed, T0 + 1)
    (only,) = await store.limits_in_use(T0 + 1, "task_type:mail")
    assert (only.limit, only.updated_ms) == (changed, T0 + 1)
    assert await store.delete_limit("task_type:mail", T0 + 2)
    assert not await store.delete_limit("task_type:mail", T0 + 3)
    assert [u.limit.id for u in await store.limits_in_use(T0 + 3)] == ["queue:slow"]


async def test_a_rate_limit_admits_its_count_per_window_and_holds_the_rest(store: Store) -> None:
    """Windows are kept in the store's clock: this test runs in real time, on short ones."""
    rate = Rate(3, 200)  # a window of 210 ms
    await store.put_limit(Limit(Scope.TASK_TYPE, "mail", rate=rate), T0)
    assert await store.wake_held(await store.now_ms()) == 0  # setting it woke it: nothing held
    seqs = await store.insert_tasks([mail(n) for n in range(5)])
    other = (await store.insert_tasks([new_task("free")]))[0]
    began = await store.now_ms()
    claimed, deferred = await claim_at(store, [*seqs, other], T0)
    assert claimed == sorted([*seqs[:3], other]) and deferred == []
    assert await held_by(store, seqs) == [None, None, None, "task_type:mail", "task_type:mail"]
    assert {(await get(store, s)).status for s in seqs[3:]} == {Status.PENDING}
    (use,) = await store.limits_in_use(await store.now_ms())
    assert (use.started_in_window, use.held) == (3, 2)

    # A new task within the window is held too, behind those held before it.
    (late,) = await store.insert_tasks([mail("late")])
    assert await claim_at(store, [late], T0 + 1) == ([], [])
    assert await held_by(store, [late]) == ["task_type:mail"]

    # The wake comes when the window frees a start: not before.
    first = await store.first_wake_ms()
    assert first is not None and began + rate.window_ms <= first < began + rate.window_ms + SLACK
    assert await store.wake_held(await store.now_ms()) == 0  # the window is full
    mark = await store.max_mark()
    await asyncio.sleep((rate.window_ms + SLACK) / 1000)
    assert await store.wake_held(await store.now_ms()) == 3
    assert await held_by(store, [*seqs[3:], late]) == [None, None, None]
    again = await store.load_pending(range(8), due_after=None, due_until=T0 + 2000, mark_after=mark)
    assert sorted(e.seq for e in again) == sorted([*seqs[3:], late])
    woken = sorted([*seqs[3:], late])
    assert await claim_at(store, [*seqs[3:], late], T0 + 2) == (woken, [])


async def test_held_tasks_go_in_priority_then_due_order(store: Store) -> None:
    rate = Rate(1, 100)
    await store.put_limit(Limit(Scope.TASK_TYPE, "mail", rate=rate), T0)
    (first,) = await store.insert_tasks([mail("first")])
    assert (await claim_at(store, [first], T0))[0] == [first]
    rest = await store.insert_tasks(
        [
            mail("low", due=T0 - 50),
            mail("urgent", options=TaskOptions(priority=9)),
            mail("early", due=T0 - 100),
        ]
    )
    assert (await claim_at(store, rest, T0 + 1))[0] == []  # all held
    low, urgent, early = rest
    woken = []
    for _ in range(3):
        await asyncio.sleep((rate.window_ms + SLACK) / 1000)
        assert await store.wake_held(await store.now_ms()) == 1
        (seq,) = [s for s in rest if s not in woken and (await get(store, s)).held_by is None]
        assert (await claim_at(store, [seq], T0 + 2))[0] == [seq]
        woken.append(seq)
    assert woken == [urgent, early, low]


async def test_a_concurrency_limit_counts_running_tasks_and_an_end_wakes_it(
    store: Store,
) -> None:
    await store.put_limit(TWO_AT_ONCE, T0)
    assert await store.wake_held(T0) == 0  # setting it woke it: nothing held yet
    a, b, c = await store.insert_tasks([slow("a"), slow("b"), slow("c")])
    tasks = await claimed_tasks(store, [a, b, c], T0)
    assert sorted(t.seq for t in tasks) == [a, b]
    assert await held_by(store, [c]) == ["queue:slow"]
    assert not await wake_due(store, T0 + 100_000)  # full: only an end wakes it
    assert await store.wake_held(T0 + 100, sweep=True) == 0  # and a sweep finds no room

    await store.finish([success(tasks[0], at=T0 + 10)])
    assert await wake_due(store, T0 + 10)
    assert await store.wake_held(T0 + 10) == 1
    assert await claim_at(store, [c], T0 + 11) == ([c], [])
    (use,) = await store.limits_in_use(T0 + 12)
    assert (use.running, use.held) == (2, 0)


async def test_a_retry_frees_its_slot_too(store: Store) -> None:
    await store.put_limit(Limit(Scope.QUEUE, "slow", concurrency=1), T0)
    a, b = await store.insert_tasks([slow("a"), slow("b")])
    (running,) = await claimed_tasks(store, [a, b], T0)
    await store.finish([retry(running, at=T0 + 5, retry_at=T0 + 1000)])
    assert await store.wake_held(T0 + 5) == 1
    assert await claim_at(store, [b], T0 + 6) == ([b], [])


async def test_a_cancelled_task_keeps_its_slot_until_its_lease_ends(store: Store) -> None:
    await store.put_limit(Limit(Scope.QUEUE, "slow", concurrency=1), T0)
    a, b = await store.insert_tasks([slow("a"), slow("b")])
    (running,) = await claimed_tasks(store, [a, b], T0)
    assert await store.cancel(a, running.fence, T0 + 10)
    lease_end = T0 + LEASE
    assert await store.wake_held(lease_end - 1) == 0
    assert await store.wake_held(lease_end - 1, sweep=True) == 0
    assert await store.wake_held(lease_end) == 1
    assert await claim_at(store, [b], lease_end) == ([b], [])


async def test_a_crashed_workers_slot_comes_back_when_its_lease_is_ended(store: Store) -> None:
    await store.put_limit(Limit(Scope.QUEUE, "slow", concurrency=1), T0)
    a, b = await store.insert_tasks([slow("a"), slow("b")])
    (running,) = await claimed_tasks(store, [a, b], T0)
    # The worker died: its task stays running, and holds the slot, past its lease...
    assert await store.wake_held(T0 + LEASE + 1, sweep=True) == 0
    # ...until the reaper ends the attempt, which wakes the limit.
    (lapsed,) = await store.expired_leases(range(8), now_ms=T0 + LEASE + 1, limit=10)
    assert lapsed.seq == a
    await store.finish([retry(running, at=T0 + LEASE + 2, retry_at=T0 + LEASE + 2)])
    assert await store.wake_held(T0 + LEASE + 2) == 1


async def test_a_limit_key_has_limits_of_its_own(store: Store) -> None:
    await store.put_limit(Limit(Scope.KEY, "tenant-1", concurrency=1), T0)
    one, two, other, none = await store.insert_tasks(
        [
            replace(new_task("one"), limit_key="tenant-1"),
            replace(new_task("two"), limit_key="tenant-1"),
            replace(new_task("other"), limit_key="tenant-2"),
            new_task("none"),
        ]
    )
    claimed, _ = await claim_at(store, [one, two, other, none], T0)
    assert claimed == sorted([one, other, none])
    assert await held_by(store, [two]) == ["key:tenant-1"]


async def test_admitted_tasks_beyond_what_the_claimer_can_start_are_deferred(
    store: Store,
) -> None:
    await store.put_limit(Limit(Scope.TASK_TYPE, "mail", rate=Rate(100, 1000)), T0)
    seqs = await store.insert_tasks([mail(n) for n in range(5)])
    free = await store.insert_tasks([new_task("free")])
    claimed, deferred = await claim_at(store, [*seqs, *free], T0, start_now=2)
    assert claimed == sorted([*seqs[:2], *free]) and deferred == seqs[2:]
    assert await held_by(store, seqs[2:]) == [None] * 3  # not held: put back on the queue
    (use,) = await store.limits_in_use(T0)
    assert use.started_in_window == 2


async def test_a_keyed_task_under_a_limit_still_waits_for_its_turn(store: Store) -> None:
    await store.put_limit(PER_SECOND_3, T0)
    first, second = await store.insert_tasks(
        [mail("first", ordering_key="k"), mail("second", ordering_key="k", due=T0 + 1)]
    )
    claimed, _ = await claim_at(store, [first, second], T0 + 1)
    assert claimed == [first]
    assert (await get(store, second)).status is Status.WAITING
    (use,) = await store.limits_in_use(T0 + 1)
    assert use.started_in_window == 1  # only what was claimed spends the window


async def test_removing_a_limit_lets_everything_it_held_go(store: Store) -> None:
    await store.put_limit(Limit(Scope.TASK_TYPE, "mail", rate=Rate(1, 60_000)), T0)
    seqs = await store.insert_tasks([mail(n) for n in range(4)])
    await claim_at(store, seqs, T0)
    assert await store.delete_limit("task_type:mail", T0 + 1)
    assert await store.wake_held(T0 + 1) == 3
    assert await claim_at(store, seqs[1:], T0 + 2) == (seqs[1:], [])


async def test_raising_a_limit_lets_held_tasks_go_at_once(store: Store) -> None:
    await store.put_limit(Limit(Scope.QUEUE, "slow", concurrency=1), T0)
    seqs = await store.insert_tasks([slow(n) for n in range(3)])
    await claim_at(store, seqs, T0)
    await store.put_limit(Limit(Scope.QUEUE, "slow", concurrency=3), T0 + 1)
    assert await store.wake_held(T0 + 1) == 2
