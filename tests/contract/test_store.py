"""The store contract: what the engine relies on, through the `Store` interface only.

Times are fixed integers (ms) except for partition leases, where the store reads its
own clock: those tests use TTLs and short real sleeps.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Iterable
from dataclasses import replace
from typing import TYPE_CHECKING, Any

import pytest

from tickwheel.errors import IdempotencyConflict, RejectedItems
from tickwheel.models import (
    ClaimedTask,
    ExecutionRecord,
    Finish,
    Idempotency,
    NewTask,
    Outcome,
    ScheduleRecord,
    ScheduleType,
    Status,
    TaskOptions,
    TaskRecord,
    WheelEntry,
    WorkflowRecord,
)
from tickwheel.storage.base import (
    Advance,
    Fence,
    InstanceBrief,
    Page,
    Store,
    TaskFilter,
    WorkerBeat,
)

if TYPE_CHECKING:
    from conftest import Stores

T0 = 1_767_225_600_000  # 2026-01-01T00:00:00Z
DAY = 86_400_000
LEASE = 30_000
LONG_TTL = 60_000
OPTIONS = TaskOptions(
    queue="emails",
    priority=7,
    max_retries=5,
    backoff_base_seconds=0.25,
    backoff_max_seconds=42.5,
    timeout_seconds=12.5,
)
EVERYTHING = TaskFilter()


# -- leases, through the one renewal the engine makes ----------------------------


async def acquire(
    store: Store, node_id: str, wanted: Iterable[int], *, ttl_ms: int
) -> dict[int, int]:
    """Take or renew the leases on `wanted`: a renewal that records no watermark."""
    return (await store.renew(node_id, {}, list(wanted), ttl_ms=ttl_ms, beat=False)).held


async def set_watermarks(store: Store, node_id: str, marks: dict[int, tuple[int, int]]) -> set[int]:
    """Record watermarks in a renewal keeping the same partitions; answer those not held
    under the epoch presented (their watermark is not recorded)."""
    renewal = await store.renew(node_id, marks, list(marks), ttl_ms=LONG_TTL, beat=False)
    return {p for p, (epoch, _) in marks.items() if renewal.held.get(p) != epoch}


async def heartbeat(store: Store, node_id: str, *, ttl_ms: int) -> list[str]:
    """Say the node is alive: a renewal that takes no lease; answer the nodes alive."""
    return (await store.renew(node_id, {}, [], ttl_ms=ttl_ms, beat=True)).alive


def new_task(
    name: object,
    *,
    due: int = T0,
    partition: int = 0,
    task_type: str = "noop",
    payload: Any = None,
    options: TaskOptions = TaskOptions(),
) -> NewTask:
    return NewTask(
        task_id=f"task-{name}",
        partition=partition,
        task_type=task_type,
        payload={"name": str(name)} if payload is None else payload,
        schedule_type=ScheduleType.DELAYED,
        due_ms=due,
        created_ms=T0 - 1_000,
        options=options,
    )


def a_schedule(schedule_id: str = "nightly") -> ScheduleRecord:
    return ScheduleRecord(
        schedule_id=schedule_id,
        task_type="report",
        payload={"to": ["ops"], "depth": {"days": 7}},
        options=TaskOptions(queue="cron", priority=3, timeout_seconds=60.0),
        cron_expression="0 3 * * *",
        timezone="Europe/Paris",
        jitter_seconds=5,
        misfire_policy="run_once",
        overlap_policy="skip",
        status="active",
        version=0,
        current_seq=None,
        previous_seq=None,
        created_ms=T0,
    )


def instance(schedule: ScheduleRecord, due: int, *, partition: int = 1) -> NewTask:
    return NewTask(
        task_id=f"{schedule.schedule_id}@{due}",
        partition=partition,
        task_type=schedule.task_type,
        payload=schedule.payload,
        schedule_type=ScheduleType.CRON,
        due_ms=due,
        created_ms=T0,
        options=schedule.options,
        schedule_id=schedule.schedule_id,
    )


async def create_schedule(
    store: Store, schedule_id: str = "nightly", due: int = T0, *, partition: int = 1
) -> tuple[ScheduleRecord, int]:
    """A committed schedule as the store holds it, and the seq of its first instance."""
    schedule = a_schedule(schedule_id)
    first = instance(schedule, due, partition=partition)
    assert await store.insert_schedule(schedule, first) == schedule_id
    record = await store.get_schedule(schedule_id)
    assert record is not None and record.current_seq is not None
    return record, record.current_seq


def just_inserted(task: NewTask, seq: int, version: int) -> TaskRecord:
    """The record of `task` as inserted: pending, never attempted."""
    return TaskRecord(
        seq=seq,
        task_id=task.task_id,
        partition=task.partition,
        task_type=task.task_type,
        payload=task.payload,
        status=Status.PENDING,
        version=version,
        schedule_type=task.schedule_type,
        schedule_id=task.schedule_id,
        due_ms=task.due_ms,
        options=task.options,
        attempts=0,
        created_ms=task.created_ms,
        triggered_ms=None,
        started_ms=None,
        completed_ms=None,
        lease_expires_ms=None,
        worker_id=None,
        last_error=None,
    )


async def get(store: Store, seq: int) -> TaskRecord:
    (record,) = await store.get_tasks([seq])
    return record


async def claim(
    store: Store, seq: int, *, now: int = T0, worker: str = "w1", lease: int = LEASE
) -> ClaimedTask:
    (claimed,) = await store.claim([(seq, now)], now_ms=now, lease_ms=lease, worker_id=worker)
    return claimed


def success(claimed: ClaimedTask, *, at: int) -> Finish:
    return Finish(claimed.seq, claimed.fence, Outcome.SUCCEEDED, Status.SUCCEEDED, ended_ms=at)


def retry(claimed: ClaimedTask, *, at: int, retry_at: int, error: str = "boom") -> Finish:
    return Finish(
        claimed.seq,
        claimed.fence,
        Outcome.FAILED,
        Status.PENDING,
        ended_ms=at,
        error=error,
        retry_at_ms=retry_at,
    )


async def all_history(store: Store, seq: int) -> list[ExecutionRecord]:
    return await store.history(task_seq=seq, schedule_id=None, before_id=None, limit=100)


# -- inserting and reading tasks ---------------------------------------------


async def test_insert_returns_increasing_seqs_in_batch_order(store: Store) -> None:
    first = await store.insert_tasks([new_task(i) for i in range(3)])
    second = await store.insert_tasks([new_task(i) for i in range(3, 5)])

    seqs = first + second
    assert len(seqs) == 5
    assert seqs == sorted(set(seqs))
    for i, seq in enumerate(seqs):
        record = await store.get_task(f"task-{i}")
        assert record is not None
        assert record.seq == seq
    assert await store.max_seq() == seqs[-1]


def keyed(name: object, key: str, request: str = "same", since: int = T0 - DAY) -> NewTask:
    return replace(new_task(name), idempotency=Idempotency(key, request, since))


async def test_an_idempotent_repeat_is_held_by_the_original(store: Store) -> None:
    (first,) = await store.insert_tasks_with_holders([keyed("a", "k")])
    held = await store.insert_tasks_with_holders(
        [keyed("b", "k"), keyed("c", "other"), new_task("d")]
    )

    assert first.task_id == "task-a"
    assert [h.task_id for h in held] == ["task-a", "task-c", "task-d"]
    assert held[0].seq == first.seq
    assert await store.get_task("task-b") is None  # a repeat writes nothing
    # Two requests with one key in one call: the first is made, the second repeats it.
    twins = await store.insert_tasks_with_holders([keyed("e", "twin"), keyed("f", "twin")])
    assert [h.task_id for h in twins] == ["task-e", "task-e"]


async def test_a_key_held_for_another_request_rejects_the_whole_call(store: Store) -> None:
    await store.insert_tasks([keyed("a", "k")])

    with pytest.raises(RejectedItems) as rejected:
        await store.insert_tasks([new_task("b"), keyed("c", "k", request="different")])

    assert list(rejected.value.errors) == [1]
    error = rejected.value.errors[1]
    assert isinstance(error, IdempotencyConflict) and error.task_id == "task-a"
    assert await store.get_task("task-b") is None


async def test_a_key_is_free_again_after_its_window(store: Store) -> None:
    await store.insert_tasks([keyed("a", "k")])
    # `since` past the first task's creation: its key has expired.
    (held,) = await store.insert_tasks_with_holders([keyed("b", "k", "new", since=T0)])
    assert held.task_id == "task-b"


def named(name: object, request: str = "same") -> NewTask:
    """A task whose id the client chose: the id dedupes it, with no key row."""
    return replace(new_task(name), request_hash=request)


async def test_a_repeated_chosen_id_is_held_by_the_task_it_made(store: Store) -> None:
    (first,) = await store.insert_tasks_with_holders([named("a")])
    held = await store.insert_tasks_with_holders([named("a"), named("b"), named("b")])

    assert first == (first.seq, "task-a", False, Status.PENDING)
    assert [(h.task_id, h.repeat, h.status) for h in held] == [
        ("task-a", True, None),  # a repeat: its original's status is read apart
        ("task-b", False, Status.PENDING),
        ("task-b", True, None),  # the same request twice in one call makes one task
    ]
    assert held[0].seq == first.seq and held[1].seq == held[2].seq
    assert [t.task_id for t in await store.list_tasks(EVERYTHING, before_seq=None, limit=10)] == [
        "task-b",
        "task-a",
    ]


async def test_a_chosen_id_taken_by_another_request_rejects_the_whole_call(store: Store) -> None:
    await store.insert_tasks([named("a"), new_task("made-by-the-server")])

    with pytest.raises(RejectedItems) as rejected:
        await store.insert_tasks([named("b"), named("a", "different"), named("made-by-the-server")])

    assert sorted(rejected.value.errors) == [1, 2]
    assert all(isinstance(e, IdempotencyConflict) for e in rejected.value.errors.values())
    assert await store.get_task("task-b") is None


async def test_a_failing_batch_commits_nothing(stores: Stores) -> None:
    store = await stores.open()
    (kept,) = await store.insert_tasks([new_task("kept")])
    await stores.refuse("doomed")

    # The database fails the batch's last row: the contract names no error type.
    with pytest.raises(Exception):  # noqa: B017
        await store.insert_tasks([new_task("a"), new_task("b"), new_task("c", task_type="doomed")])

    assert await store.get_task("task-a") is None
    assert await store.get_task("task-b") is None
    assert await store.max_seq() == kept


@pytest.mark.parametrize(
    "payload",
    [
        {"nested": {"list": [1, 2.5, None, True, "é ✓"]}, "empty": {}, "none": None},
        [1, [2, [3, []]], {"k": "v"}],
        "just text",
        42,
        False,
    ],
    ids=["dict", "list", "str", "int", "bool"],
)
async def test_get_task_round_trips_every_field(store: Store, payload: Any) -> None:
    task = new_task("x", due=T0 + 500, partition=5, payload=payload, options=OPTIONS)

    (seq,) = await store.insert_tasks([task])
    record = await store.get_task(task.task_id)

    assert record is not None
    assert record == just_inserted(task, seq, record.version)
    assert (record.payload, record.options.timeout_seconds) == (payload, 12.5)
    assert await store.get_tasks([seq]) == [record]


async def test_get_tasks_returns_only_the_asked_tasks(store: Store) -> None:
    seqs = await store.insert_tasks([new_task(i) for i in range(4)])

    got = await store.get_tasks([seqs[0], seqs[2], 999_999])

    assert sorted(r.seq for r in got) == [seqs[0], seqs[2]]
    assert await store.get_tasks([]) == []
    assert await store.get_task("task-unknown") is None


# -- listing -----------------------------------------------------------------


async def test_list_tasks_is_newest_first(store: Store) -> None:
    seqs = await store.insert_tasks([new_task(i) for i in range(5)])

    listed = await store.list_tasks(EVERYTHING, before_seq=None, limit=10)

    assert [r.seq for r in listed] == seqs[::-1]
    assert await store.list_tasks(EVERYTHING, before_seq=None, limit=2) == listed[:2]


async def test_paging_with_before_seq_visits_every_task_once(store: Store) -> None:
    seqs = await store.insert_tasks([new_task(i) for i in range(10)])

    seen: list[int] = []
    before: int | None = None
    for _ in range(10):
        page = await store.list_tasks(EVERYTHING, before_seq=before, limit=3)
        if not page:
            break
        assert len(page) <= 3
        seen.extend(r.seq for r in page)
        before = page[-1].seq

    assert seen == seqs[::-1]


async def test_list_tasks_filters(store: Store) -> None:
    schedule, first = await create_schedule(store)
    (second,) = await store.advance_schedules(
        [Advance(schedule, instance(schedule, T0 + DAY), None, None)]
    )
    assert second is not None
    a, b, c = await store.insert_tasks(
        [new_task("a", task_type="email"), new_task("b", task_type="email"), new_task("c")]
    )
    await claim(store, a)
    await store.cancel(c, (await get(store, c)).version, T0)

    async def listed(where: TaskFilter) -> list[int]:
        return [r.seq for r in await store.list_tasks(where, before_seq=None, limit=100)]

    assert await listed(TaskFilter(statuses=(Status.RUNNING,))) == [a]
    assert await listed(TaskFilter(statuses=(Status.RUNNING, Status.CANCELLED))) == [c, a]
    assert await listed(TaskFilter(statuses=(Status.PENDING,))) == [b, second, first]
    assert await listed(TaskFilter(task_type="email")) == [b, a]
    assert await listed(TaskFilter(schedule_id="nightly")) == [second, first]
    assert await listed(TaskFilter(statuses=(Status.PENDING,), task_type="email")) == [b]
    assert await listed(TaskFilter(schedule_id="other")) == []


# -- loading the wheels ------------------------------------------------------


async def test_load_pending_range_is_open_below_closed_above(store: Store) -> None:
    overdue, now, soon, later = await store.insert_tasks(
        [new_task(i, due=T0 + offset) for i, offset in enumerate([-DAY, 0, 100, 200])]
    )

    async def loaded(due_after: int | None, due_until: int) -> set[int]:
        rows = await store.load_pending([0], due_after=due_after, due_until=due_until)
        return {r.seq for r in rows}

    assert await loaded(None, T0) == {overdue, now}
    assert await loaded(T0, T0 + 100) == {soon}
    assert await loaded(T0 - 1, T0 + 200) == {now, soon, later}
    assert await loaded(T0 + 200, T0 + DAY) == set()


async def test_load_pending_returns_only_pending_tasks(store: Store) -> None:
    pending, running, cancelled = await store.insert_tasks([new_task(i) for i in range(3)])
    await claim(store, running)
    await store.cancel(cancelled, (await get(store, cancelled)).version, T0)

    rows = await store.load_pending([0], due_after=None, due_until=T0 + DAY)

    assert [r.seq for r in rows] == [pending]


async def test_load_pending_returns_only_the_given_partitions(store: Store) -> None:
    seqs = await store.insert_tasks([new_task(p, partition=p) for p in range(4)])

    rows = await store.load_pending([1, 3], due_after=None, due_until=T0)

    assert {r.seq for r in rows} == {seqs[1], seqs[3]}
    assert await store.load_pending([], due_after=None, due_until=T0) == []


async def test_load_pending_after_a_mark(store: Store) -> None:
    (old,) = await store.insert_tasks([new_task("old", due=T0 - DAY)])
    mark = await store.max_mark()
    new, _, _ = await store.insert_tasks(
        [new_task("new"), new_task("later", due=T0 + DAY), new_task("p4", partition=4)]
    )
    running, last = await store.insert_tasks([new_task("running"), new_task("last", due=T0 - 5)])
    await claim(store, running)

    rows = await store.load_pending([0], due_after=None, due_until=T0, mark_after=mark)
    assert old < new
    assert {r.seq for r in rows} == {new, last}  # not: too late, elsewhere, running


async def test_a_retried_task_gets_a_new_mark_and_is_loaded_again(store: Store) -> None:
    # A retry keeps its seq; the loader must still see it become pending again.
    (seq,) = await store.insert_tasks([new_task("flaky")])
    first = await claim(store, seq)
    mark = await store.max_mark()
    assert await store.load_pending([0], due_after=None, due_until=T0 + DAY, mark_after=mark) == []

    assert await store.finish([retry(first, at=T0 + 10, retry_at=T0 + 5_000)]) == [True]

    assert await store.max_mark() > mark
    rows = await store.load_pending([0], due_after=None, due_until=T0 + DAY, mark_after=mark)
    assert [(r.seq, r.due_ms) for r in rows] == [(seq, T0 + 5_000)]


async def test_the_reaper_loses_to_a_heartbeat_that_extended_the_lease(store: Store) -> None:
    (seq,) = await store.insert_tasks([new_task("alive")])
    claimed = await claim(store, seq)
    assert await store.extend_leases({seq: claimed.fence}, until_ms=T0 + 10 * DAY) == set()
    reaped = replace(retry(claimed, at=T0 + 10, retry_at=T0 + 20), lease_expired_before=T0 + 10)

    assert await store.finish([reaped]) == [False]
    assert await store.finish([success(claimed, at=T0 + 11)]) == [True]


async def test_wheel_entries_carry_routing(store: Store) -> None:
    (plain,) = await store.insert_tasks([new_task("p", partition=1, options=OPTIONS)])
    _, cron = await create_schedule(store, due=T0 - 10)

    rows = await store.load_pending([1], due_after=None, due_until=T0)

    got = sorted(rows, key=lambda r: r.seq)
    assert [replace(r, mark=0) for r in got] == [
        WheelEntry(seq=plain, partition=1, due_ms=T0, queue="emails", priority=7, is_cron=False),
        WheelEntry(seq=cron, partition=1, due_ms=T0 - 10, queue="cron", priority=3, is_cron=True),
    ]
    assert 0 < got[0].mark < got[1].mark  # stamped in commit order


# -- claims ------------------------------------------------------------------


async def test_overdue_lists_pending_tasks_due_before_oldest_first(store: Store) -> None:
    late, later, done, elsewhere, _future = await store.insert_tasks(
        [
            new_task("late", due=T0 - 50),
            new_task("later", due=T0 - 10),
            new_task("done", due=T0 - 99),
            new_task("elsewhere", due=T0 - 70, partition=1),
            new_task("future", due=T0 + 10),
        ]
    )
    await store.finish([success(await claim(store, done), at=T0)])
    found = await store.overdue([0], due_before=T0, limit=10)
    assert [e.seq for e in found] == [late, later]
    assert [e.seq for e in await store.overdue([0, 1], due_before=T0, limit=2)] == [elsewhere, late]


async def test_claim_takes_a_due_pending_task_under_a_lease(store: Store) -> None:
    task = new_task("c", due=T0 - 500, payload={"a": [1, {"b": None}]}, options=OPTIONS)
    (seq,) = await store.insert_tasks([task])
    before = await get(store, seq)

    claimed = await store.claim([(seq, T0 - 100)], now_ms=T0, lease_ms=LEASE, worker_id="w1")

    assert len(claimed) == 1
    fence = claimed[0].fence
    assert claimed == [
        ClaimedTask(
            seq=seq,
            task_id="task-c",
            task_type="noop",
            payload={"a": [1, {"b": None}]},
            attempt=1,
            fence=fence,
            due_ms=T0 - 500,
            lease_expires_ms=T0 + LEASE,
            timeout_seconds=12.5,
            options=OPTIONS,
        )
    ]
    assert fence > before.version
    after = await get(store, seq)
    assert after == replace(
        before,
        status=Status.RUNNING,
        version=fence,
        attempts=1,
        triggered_ms=T0 - 100,
        started_ms=T0,
        lease_expires_ms=T0 + LEASE,
        worker_id="w1",
    )


async def test_claim_skips_tasks_not_due_or_not_pending(store: Store) -> None:
    due, exactly_due, future, cancelled = await store.insert_tasks(
        [new_task(0, due=T0 - 1), new_task(1, due=T0), new_task(2, due=T0 + 1), new_task(3)]
    )
    await store.cancel(cancelled, (await get(store, cancelled)).version, T0)
    items = [(s, T0) for s in (due, exactly_due, future, cancelled)]

    claimed = await store.claim(items, now_ms=T0, lease_ms=LEASE, worker_id="w1")

    assert sorted(c.seq for c in claimed) == [due, exactly_due]
    assert (await get(store, future)).status is Status.PENDING
    assert (await get(store, cancelled)).status is Status.CANCELLED


async def test_claims_go_by_the_release_stamp_not_the_claimers_clock(store: Store) -> None:
    (seq,) = await store.insert_tasks([new_task("skewed", due=T0)])
    # Released on time by the scheduler's clock; this worker's clock is 40 ms behind.
    (claimed,) = await store.claim([(seq, T0)], now_ms=T0 - 40, lease_ms=LEASE, worker_id="w")
    assert claimed.seq == seq
    (retried,) = await store.insert_tasks([new_task("retried", due=T0 + 5_000)])
    # An item released before the task's current due time is stale, whatever the clock.
    stale = await store.claim([(retried, T0)], now_ms=T0 + 9_000, lease_ms=LEASE, worker_id="w")
    assert stale == []


async def test_a_task_pulled_twice_in_one_batch_is_claimed_once(store: Store) -> None:
    (seq,) = await store.insert_tasks([new_task("twice")])
    claimed = await store.claim([(seq, T0), (seq, T0)], now_ms=T0, lease_ms=LEASE, worker_id="w")
    assert [c.seq for c in claimed] == [seq]


async def test_a_claimed_task_cannot_be_claimed_again(store: Store) -> None:
    (seq,) = await store.insert_tasks([new_task("once")])
    await claim(store, seq, worker="w1")
    held = await get(store, seq)

    again = await store.claim([(seq, T0 + 5)], now_ms=T0 + 5, lease_ms=LEASE, worker_id="w2")

    assert again == []
    assert await get(store, seq) == held


@pytest.mark.parametrize("rival", ["same store", "another store"])
async def test_racing_claims_take_each_task_once(store: Store, stores: Stores, rival: str) -> None:
    other = store if rival == "same store" else await stores.open()
    seqs = await store.insert_tasks([new_task(i) for i in range(30)])
    items = [(s, T0) for s in seqs]

    mine, theirs = await asyncio.gather(
        store.claim(items, now_ms=T0, lease_ms=LEASE, worker_id="w1"),
        other.claim(items[::-1], now_ms=T0, lease_ms=LEASE, worker_id="w2"),
    )

    assert sorted(c.seq for c in mine + theirs) == seqs
    for record in await store.get_tasks(seqs):
        assert record.attempts == 1
        assert record.worker_id == ("w1" if record.seq in {c.seq for c in mine} else "w2")


# -- leases of tasks ---------------------------------------------------------


async def test_extend_leases_extends_valid_fences_and_reports_stale_ones(store: Store) -> None:
    good, wrong, done = await store.insert_tasks([new_task(i) for i in range(3)])
    fences = {s: (await claim(store, s)).fence for s in (good, wrong, done)}
    (finished,) = await store.finish(
        [Finish(done, fences[done], Outcome.SUCCEEDED, Status.SUCCEEDED, ended_ms=T0 + 1)]
    )
    assert finished

    stale = await store.extend_leases(
        {good: fences[good], wrong: fences[wrong] - 1, done: fences[done]}, until_ms=T0 + DAY
    )

    assert stale == {wrong, done}
    assert (await get(store, good)).lease_expires_ms == T0 + DAY
    assert (await get(store, wrong)).lease_expires_ms == T0 + LEASE
    assert (await get(store, done)).lease_expires_ms is None
    assert await store.extend_leases({}, until_ms=T0 + DAY) == set()


async def test_expired_leases(store: Store) -> None:
    p0, p1, p2, long, _ = await store.insert_tasks(
        [new_task(p, partition=p) for p in range(3)]
        + [new_task("long"), new_task("pending", due=T0 - DAY)]
    )
    for seq in (p0, p1, p2):
        await claim(store, seq, lease=1_000)
    await claim(store, long, lease=DAY)

    expired = await store.expired_leases([0, 1], now_ms=T0 + 2_000, limit=10)

    assert {r.seq for r in expired} == {p0, p1}
    assert {r.status for r in expired} == {Status.RUNNING}
    assert await store.expired_leases([0, 1, 2], now_ms=T0 + 500, limit=10) == []
    assert len(await store.expired_leases([0, 1, 2], now_ms=T0 + 2_000, limit=2)) == 2
    assert len(await store.expired_leases([0, 1, 2], now_ms=T0 + 2_000, limit=10)) == 3


# -- ends of attempts --------------------------------------------------------


async def test_success_ends_the_task_with_one_execution_row(store: Store) -> None:
    (seq,) = await store.insert_tasks([new_task("ok")])
    claimed = await claim(store, seq, worker="w7")
    running = await get(store, seq)

    assert await store.finish([success(claimed, at=T0 + 50)]) == [True]

    record = await get(store, seq)
    assert record == replace(
        running,
        status=Status.SUCCEEDED,
        version=record.version,
        completed_ms=T0 + 50,
        lease_expires_ms=None,
    )
    assert record.version > claimed.fence
    (row,) = await all_history(store, seq)
    assert row == ExecutionRecord(
        id=row.id,
        task_id="task-ok",
        attempt=1,
        fence=claimed.fence,
        worker_id="w7",
        started_ms=T0,
        ended_ms=T0 + 50,
        outcome=Outcome.SUCCEEDED,
        error=None,
    )


async def test_a_stale_fence_finishes_nothing(store: Store) -> None:
    stale, fresh = await store.insert_tasks([new_task("stale"), new_task("fresh")])
    lost = await claim(store, stale)
    held = await get(store, stale)
    ok = await claim(store, fresh)

    results = await store.finish([replace(success(lost, at=T0 + 5), fence=lost.fence - 1)])
    assert results == [False]
    assert await get(store, stale) == held
    assert await all_history(store, stale) == []

    batch = [success(ok, at=T0 + 5), replace(success(lost, at=T0 + 5), fence=lost.fence + 1)]
    assert await store.finish(batch) == [True, False]
    assert len(await all_history(store, fresh)) == 1
    assert await all_history(store, stale) == []


async def test_a_finished_task_cannot_be_finished_twice(store: Store) -> None:
    (seq,) = await store.insert_tasks([new_task("twice")])
    claimed = await claim(store, seq)

    assert await store.finish([success(claimed, at=T0 + 5)]) == [True]
    assert await store.finish([success(claimed, at=T0 + 9)]) == [False]
    assert (await get(store, seq)).completed_ms == T0 + 5
    assert len(await all_history(store, seq)) == 1


async def test_two_ends_of_one_attempt_in_one_batch_apply_once(store: Store) -> None:
    # A worker and the reaper may end the same attempt in the same group commit.
    (seq,) = await store.insert_tasks([new_task("both")])
    claimed = await claim(store, seq)
    batch = [success(claimed, at=T0 + 5), success(claimed, at=T0 + 9)]

    assert await store.finish(batch) == [True, False]
    assert (await get(store, seq)).completed_ms == T0 + 5
    assert len(await all_history(store, seq)) == 1


async def test_a_retry_puts_the_task_back_to_pending(store: Store) -> None:
    (seq,) = await store.insert_tasks([new_task("flaky")])
    first = await claim(store, seq)

    assert await store.finish([retry(first, at=T0 + 10, retry_at=T0 + 5_000)]) == [True]

    record = await get(store, seq)
    assert record.status is Status.PENDING
    assert record.due_ms == T0 + 5_000
    assert record.last_error == "boom"
    assert record.attempts == 1
    assert (record.completed_ms, record.lease_expires_ms) == (None, None)
    assert record.version > first.fence
    (row,) = await all_history(store, seq)
    assert (row.outcome, row.error, row.attempt) == (Outcome.FAILED, "boom", 1)

    rows = await store.load_pending([0], due_after=T0, due_until=T0 + 5_000)
    assert [r.seq for r in rows] == [seq]
    assert await store.claim([(seq, T0 + 1)], now_ms=T0 + 1, lease_ms=LEASE, worker_id="w") == []
    second = await claim(store, seq, now=T0 + 5_000)
    assert second.attempt == 2
    assert second.fence > record.version
    assert (await get(store, seq)).last_error == "boom"


async def test_history_of_two_failures_and_a_success(store: Store) -> None:
    seq, other = await store.insert_tasks([new_task("flaky"), new_task("other")])
    await store.finish([success(await claim(store, other), at=T0 + 1)])
    now = T0
    for attempt in (1, 2, 3):
        claimed = await claim(store, seq, now=now, worker=f"w{attempt}")
        if attempt < 3:
            end = retry(claimed, at=now + 10, retry_at=now + 100, error=f"boom {attempt}")
        else:
            end = success(claimed, at=now + 10)
        assert await store.finish([end]) == [True]
        now += 100

    rows = await all_history(store, seq)

    assert [r.attempt for r in rows] == [3, 2, 1]
    assert [r.outcome for r in rows] == [Outcome.SUCCEEDED, Outcome.FAILED, Outcome.FAILED]
    assert [r.error for r in rows] == [None, "boom 2", "boom 1"]
    assert [r.worker_id for r in rows] == ["w3", "w2", "w1"]
    assert [r.started_ms for r in rows] == [T0 + 200, T0 + 100, T0]
    assert {r.task_id for r in rows} == {"task-flaky"}
    assert rows[0].fence > rows[1].fence > rows[2].fence
    assert rows[0].id > rows[1].id > rows[2].id

    page = await store.history(task_seq=seq, schedule_id=None, before_id=None, limit=2)
    assert page == rows[:2]
    page = await store.history(task_seq=seq, schedule_id=None, before_id=page[-1].id, limit=2)
    assert page == rows[2:]
    assert await store.history(task_seq=seq, schedule_id=None, before_id=rows[-1].id, limit=2) == []


# -- cancelling --------------------------------------------------------------


async def test_cancel_is_a_compare_and_set_on_the_version(store: Store) -> None:
    (seq,) = await store.insert_tasks([new_task("c")])
    pending = await get(store, seq)

    assert not await store.cancel(seq, pending.version + 1, T0)
    assert await get(store, seq) == pending

    claimed = await claim(store, seq)
    running = await get(store, seq)
    assert not await store.cancel(seq, pending.version, T0 + 5)
    assert await get(store, seq) == running

    assert await store.cancel(seq, running.version, T0 + 10)
    cancelled = await get(store, seq)
    assert (cancelled.status, cancelled.completed_ms) == (Status.CANCELLED, T0 + 10)
    assert cancelled.version > running.version
    # The worker that held it loses: its fence is stale now.
    assert await store.finish([success(claimed, at=T0 + 20)]) == [False]


async def test_cancelling_a_running_attempt_writes_its_execution_row(store: Store) -> None:
    waiting, running = await store.insert_tasks([new_task("waiting"), new_task("running")])
    assert await store.cancel(waiting, (await get(store, waiting)).version, T0)
    claimed = await claim(store, running, worker="w1")

    assert await store.cancel(running, claimed.fence, T0 + 10)

    assert await all_history(store, waiting) == []  # nothing was running: no attempt
    (row,) = await all_history(store, running)
    assert (row.outcome, row.attempt, row.fence, row.worker_id) == (
        Outcome.CANCELLED,
        1,
        claimed.fence,
        "w1",
    )
    assert (row.started_ms, row.ended_ms, row.retry_at_ms) == (T0, T0 + 10, None)
    assert await store.execution_at(running, claimed.fence) == row
    assert await store.finish([success(claimed, at=T0 + 20)]) == [False]
    assert len(await all_history(store, running)) == 1


async def test_an_execution_is_found_by_its_fence_with_what_its_end_decided(
    store: Store,
) -> None:
    (seq,) = await store.insert_tasks([new_task("flaky")])
    first = await claim(store, seq)
    assert await store.execution_at(seq, first.fence) is None
    assert await store.finish([retry(first, at=T0 + 10, retry_at=T0 + 5_000)]) == [True]
    second = await claim(store, seq, now=T0 + 5_000)
    assert await store.finish([success(second, at=T0 + 5_010)]) == [True]

    failed = await store.execution_at(seq, first.fence)
    succeeded = await store.execution_at(seq, second.fence)
    assert failed is not None and succeeded is not None
    assert (failed.outcome, failed.retry_at_ms) == (Outcome.FAILED, T0 + 5_000)
    assert (succeeded.outcome, succeeded.retry_at_ms) == (Outcome.SUCCEEDED, None)
    assert await all_history(store, seq) == [succeeded, failed]


# -- schedules ---------------------------------------------------------------


async def test_insert_schedule_commits_it_with_its_first_instance(store: Store) -> None:
    schedule = a_schedule()
    first = instance(schedule, T0 + DAY)

    assert await store.insert_schedule(schedule, first) == "nightly"

    record = await store.get_task(first.task_id)
    assert record is not None
    seq = record.seq
    assert await store.get_schedule("nightly") == replace(schedule, current_seq=seq)
    assert record == just_inserted(first, seq, record.version)
    assert (record.schedule_id, record.schedule_type) == ("nightly", ScheduleType.CRON)
    assert await store.get_schedule("unknown") is None


async def test_schedules_of_returns_active_schedules_by_current_seq(store: Store) -> None:
    a, seq_a = await create_schedule(store, "a")
    b, seq_b = await create_schedule(store, "b")
    _, seq_c = await create_schedule(store, "c")
    await store.set_schedule_status("c", "paused")
    (plain,) = await store.insert_tasks([new_task("plain")])

    got = await store.schedules_of([seq_a, seq_b, seq_c, plain, 999_999])

    assert got == {seq_a: a, seq_b: b}
    assert await store.schedules_of([]) == {}


async def test_advance_makes_the_next_instance_current(store: Store) -> None:
    schedule, first = await create_schedule(store)
    nxt = instance(schedule, T0 + DAY, partition=6)

    (second,) = await store.advance_schedules([Advance(schedule, nxt, None, None)])

    assert second is not None
    assert second > first
    assert second == await store.max_seq()
    advanced = await store.get_schedule("nightly")
    assert advanced is not None
    assert advanced == replace(
        schedule, version=advanced.version, current_seq=second, previous_seq=first
    )
    assert advanced.version != schedule.version
    record = await get(store, second)
    assert record == just_inserted(nxt, second, record.version)
    assert (await get(store, first)).status is Status.PENDING
    assert await store.schedules_of([first, second]) == {second: advanced}


async def test_advance_with_a_stale_version_changes_nothing(store: Store) -> None:
    schedule, first = await create_schedule(store)
    (second,) = await store.advance_schedules(
        [Advance(schedule, instance(schedule, T0 + DAY), None, None)]
    )
    advanced = await store.get_schedule("nightly")
    top = await store.max_seq()
    late = instance(schedule, T0 + 2 * DAY)

    assert await store.advance_schedules([Advance(schedule, late, (first, "skipped"), None)]) == [
        None
    ]

    assert await store.get_schedule("nightly") == advanced
    assert await store.max_seq() == top
    assert await store.get_task(late.task_id) is None
    assert (await get(store, first)).status is Status.PENDING  # the skip was not applied
    listed = await store.list_tasks(TaskFilter(schedule_id="nightly"), before_seq=None, limit=10)
    assert [r.seq for r in listed] == [second, first]


async def test_advance_batch_answers_each_schedule(store: Store) -> None:
    stale, _ = await create_schedule(store, "stale")
    fresh, _ = await create_schedule(store, "fresh")
    await store.advance_schedules([Advance(stale, instance(stale, T0 + DAY), None, None)])

    results = await store.advance_schedules(
        [
            Advance(stale, instance(stale, T0 + 2 * DAY), None, None),
            Advance(fresh, instance(fresh, T0 + DAY), None, None),
        ]
    )

    assert results[0] is None
    assert results[1] is not None
    fresh_now = await store.get_schedule("fresh")
    assert fresh_now is not None
    assert fresh_now.current_seq == results[1]


async def test_advance_can_skip_the_current_instance(store: Store) -> None:
    schedule, first = await create_schedule(store)

    skip = (first, "skipped: test")
    (second,) = await store.advance_schedules(
        [Advance(schedule, instance(schedule, T0 + DAY), skip, None)]
    )

    assert second is not None
    skipped = await get(store, first)
    assert skipped.status is Status.CANCELLED
    assert (await get(store, second)).status is Status.PENDING
    assert [r.seq for r in await store.load_pending([1], due_after=None, due_until=T0 + DAY)] == [
        second
    ]


def fenced(schedule: ScheduleRecord, fence: Fence, *, skip: int | None = None) -> Advance:
    """An advance past the current instance, made by the holder of its partition's lease."""
    return Advance(
        schedule,
        instance(schedule, T0 + DAY),
        None if skip is None else (skip, "skipped"),
        fence,
    )


async def assert_refused(store: Store, advance: Advance) -> None:
    """The advance is refused and writes nothing."""
    before = await store.get_schedule(advance.schedule.schedule_id)
    top = await store.max_seq()

    assert await store.advance_schedules([advance]) == [None]

    assert await store.get_schedule(advance.schedule.schedule_id) == before
    assert await store.max_seq() == top
    assert await store.get_task(advance.instance.task_id) is None
    if advance.skip is not None:
        assert (await get(store, advance.skip[0])).status is Status.PENDING


async def test_an_advance_presenting_the_current_lease_succeeds(store: Store) -> None:
    schedule, first = await create_schedule(store)
    held = await acquire(store, "a", [1], ttl_ms=LONG_TTL)

    (second,) = await store.advance_schedules([fenced(schedule, Fence("a", 1, held[1]))])

    assert second is not None
    advanced = await store.get_schedule("nightly")
    assert advanced is not None
    assert (advanced.current_seq, advanced.previous_seq) == (second, first)


async def test_an_advance_presenting_a_stale_epoch_is_refused(store: Store) -> None:
    schedule, first = await create_schedule(store)
    old = await acquire(store, "a", [1], ttl_ms=LONG_TTL)
    await store.release("a", old)
    new = await acquire(store, "b", [1], ttl_ms=LONG_TTL)
    assert new[1] > old[1]

    await assert_refused(store, fenced(schedule, Fence("a", 1, old[1]), skip=first))
    # The epoch alone is no fence: only its holder may present it.
    await assert_refused(store, fenced(schedule, Fence("a", 1, new[1])))
    (second,) = await store.advance_schedules([fenced(schedule, Fence("b", 1, new[1]))])
    assert second is not None


async def test_an_advance_under_an_expired_lease_is_refused(store: Store) -> None:
    schedule, _ = await create_schedule(store)
    held = await acquire(store, "a", [1], ttl_ms=200)

    await asyncio.sleep(0.3)  # lapsed by the store's clock, though no node took it over

    await assert_refused(store, fenced(schedule, Fence("a", 1, held[1])))


async def test_a_fenced_batch_answers_each_advance(store: Store) -> None:
    kept, _ = await create_schedule(store, "kept", partition=1)
    lost, _ = await create_schedule(store, "lost", partition=2)
    held = await acquire(store, "a", [1, 2], ttl_ms=LONG_TTL)
    await store.release("a", {2: held[2]})
    await acquire(store, "b", [2], ttl_ms=LONG_TTL)

    results = await store.advance_schedules(
        [fenced(lost, Fence("a", 2, held[2])), fenced(kept, Fence("a", 1, held[1]))]
    )

    assert results[0] is None
    assert results[1] is not None
    assert await store.get_schedule("lost") == lost
    kept_now = await store.get_schedule("kept")
    assert kept_now is not None and kept_now.current_seq == results[1]


async def test_set_schedule_status(store: Store) -> None:
    schedule, first = await create_schedule(store)

    paused = await store.set_schedule_status("nightly", "paused")

    assert paused is not None
    assert paused.status == "paused"
    assert await store.get_schedule("nightly") == paused
    assert await store.schedules_of([first]) == {}
    # A resolver still holding the record read before the pause must not advance it.
    assert await store.advance_schedules(
        [Advance(schedule, instance(schedule, T0 + DAY), None, None)]
    ) == [None]
    resumed = await store.set_schedule_status("nightly", "active")
    assert resumed is not None
    assert await store.schedules_of([first]) == {first: resumed}
    assert await store.set_schedule_status("unknown", "paused") is None


async def test_set_schedule_status_only_from_is_a_compare_and_set(store: Store) -> None:
    await create_schedule(store)
    await store.set_schedule_status("nightly", "cancelled")

    assert await store.set_schedule_status("nightly", "active", only_from={"paused"}) is None
    stored = await store.get_schedule("nightly")
    assert stored is not None and stored.status == "cancelled"
    paused = await store.set_schedule_status("nightly", "paused", only_from={"cancelled"})
    assert paused is not None and paused.status == "paused"


async def test_history_of_a_schedule_spans_its_instances(store: Store) -> None:
    schedule, first = await create_schedule(store)
    (plain,) = await store.insert_tasks([new_task("plain")])
    await store.finish([success(await claim(store, first), at=T0 + 1)])
    (second,) = await store.advance_schedules(
        [Advance(schedule, instance(schedule, T0 + DAY), None, None)]
    )
    assert second is not None
    await store.finish([success(await claim(store, second, now=T0 + DAY), at=T0 + DAY + 1)])
    await store.finish([success(await claim(store, plain), at=T0 + 2)])

    rows = await store.history(task_seq=None, schedule_id="nightly", before_id=None, limit=10)

    assert [r.task_id for r in rows] == [f"nightly@{T0 + DAY}", f"nightly@{T0}"]


# -- partition leases ----------------------------------------------------------


async def test_partitions_are_fixed_when_the_store_is_created(stores: Stores) -> None:
    store = await stores.open(partitions=5)

    assert await store.partitions() == 5
    held = await acquire(store, "a", range(10), ttl_ms=LONG_TTL)
    assert sorted(held) == [0, 1, 2, 3, 4]


async def test_acquire_gives_free_partitions_to_one_node(store: Store) -> None:
    everything = range(await store.partitions())

    held = await acquire(store, "a", everything, ttl_ms=LONG_TTL)

    assert sorted(held) == list(everything)
    assert min(held.values()) >= 1
    assert await acquire(store, "b", everything, ttl_ms=LONG_TTL) == {}
    assert await acquire(store, "a", everything, ttl_ms=LONG_TTL) == held


async def test_acquire_takes_only_the_wanted_partitions(store: Store) -> None:
    everything = range(await store.partitions())

    mine = await acquire(store, "a", [0, 1, 2], ttl_ms=LONG_TTL)
    theirs = await acquire(store, "b", everything, ttl_ms=LONG_TTL)

    assert sorted(mine) == [0, 1, 2]
    assert sorted(theirs) == list(everything)[3:]


async def test_an_expired_lease_moves_to_another_node_with_a_higher_epoch(store: Store) -> None:
    everything = range(await store.partitions())
    old = await acquire(store, "a", everything, ttl_ms=200)
    assert await acquire(store, "b", everything, ttl_ms=200) == {}

    await asyncio.sleep(0.3)
    new = await acquire(store, "b", everything, ttl_ms=LONG_TTL)

    assert sorted(new) == list(everything)
    assert all(new[p] > old[p] for p in everything)
    assert await acquire(store, "a", everything, ttl_ms=LONG_TTL) == {}
    before = await store.watermarks()
    lost = await set_watermarks(store, "a", {p: (old[p], T0) for p in everything})
    assert lost == set(everything)
    assert await store.watermarks() == before


async def test_watermarks_are_fenced_by_epoch_and_only_move_forward(store: Store) -> None:
    held = await acquire(store, "a", [0, 1], ttl_ms=LONG_TTL)
    before = await store.watermarks()

    lost = await set_watermarks(store, "a", {0: (held[0], T0), 1: (held[1] + 1, T0)})

    assert lost == {1}
    marks = await store.watermarks()
    assert (marks[0], marks[1]) == (T0, before[1])
    assert await set_watermarks(store, "a", {0: (held[0], T0 - 500)}) == set()
    assert (await store.watermarks())[0] == T0
    assert await set_watermarks(store, "a", {0: (held[0], T0 + 500)}) == set()
    assert (await store.watermarks())[0] == T0 + 500
    # Neither another node with the holder's epoch nor anyone on a free partition.
    assert await set_watermarks(store, "b", {0: (held[0], T0 + DAY)}) == {0}
    free = await store.renew("a", {2: (held[0], T0 + DAY)}, [], ttl_ms=LONG_TTL, beat=False)
    assert free.held == {}
    marks = await store.watermarks()
    assert (marks[0], marks[2]) == (T0 + 500, before[2])


async def test_renewal_keeps_the_epoch_and_the_lease(store: Store) -> None:
    held = await acquire(store, "a", [0], ttl_ms=400)
    for _ in range(3):  # 0.45 s in all: without the renewals the lease would have run out
        await asyncio.sleep(0.15)
        assert await acquire(store, "a", [0], ttl_ms=400) == held

    assert await acquire(store, "b", [0], ttl_ms=400) == {}
    assert await set_watermarks(store, "a", {0: (held[0], T0)}) == set()


async def test_release_frees_partitions_at_once(store: Store) -> None:
    everything = range(await store.partitions())
    held = await acquire(store, "a", everything, ttl_ms=LONG_TTL)

    await store.release("b", held)  # not b's to release
    assert await acquire(store, "b", everything, ttl_ms=LONG_TTL) == {}

    await store.release("a", held)
    taken = await acquire(store, "b", everything, ttl_ms=LONG_TTL)

    assert sorted(taken) == list(everything)
    assert all(taken[p] > held[p] for p in everything)
    assert await set_watermarks(store, "a", {0: (held[0], T0)}) == {0}


async def test_nodes_alive_are_those_whose_heartbeat_has_not_lapsed(store: Store) -> None:
    assert await heartbeat(store, "b", ttl_ms=200) == ["b"]
    assert await heartbeat(store, "a", ttl_ms=LONG_TTL) == ["a", "b"]
    await asyncio.sleep(0.3)
    assert await heartbeat(store, "a", ttl_ms=LONG_TTL) == ["a"]  # b's lapsed
    assert await heartbeat(store, "b", ttl_ms=LONG_TTL) == ["a", "b"]  # back again
    await store.leave("a")
    assert await heartbeat(store, "b", ttl_ms=LONG_TTL) == ["b"]


async def test_one_renewal_records_watermarks_gives_back_and_takes(store: Store) -> None:
    held = await acquire(store, "a", [0, 1, 2], ttl_ms=LONG_TTL)
    before = await store.watermarks()
    marks = {0: (held[0], T0), 1: (held[1] + 1, T0), 2: (held[2], T0)}

    renewal = await store.renew("a", marks, [0, 1, 3], ttl_ms=LONG_TTL, beat=False)

    # 0 renewed with its epoch; 1's stale epoch wrote no watermark, yet a holds it
    # still (it was ours); 2 given back; 3 taken under a new epoch.
    assert renewal.held == {0: held[0], 1: held[1], 3: renewal.held[3]}
    assert renewal.alive == []
    marks_now = await store.watermarks()
    assert (marks_now[0], marks_now[1], marks_now[2]) == (T0, before[1], T0)
    taken = await acquire(store, "b", [2, 3], ttl_ms=LONG_TTL)
    assert list(taken) == [2]
    assert taken[2] > held[2]


async def test_a_renewal_after_the_lease_lapsed_comes_back_under_a_new_epoch(store: Store) -> None:
    held = await acquire(store, "a", [0, 1], ttl_ms=200)
    await asyncio.sleep(0.3)
    assert list(await acquire(store, "b", [1], ttl_ms=LONG_TTL)) == [1]
    before = await store.watermarks()

    marks = {p: (held[p], T0) for p in held}
    renewal = await store.renew("a", marks, [0, 1], ttl_ms=LONG_TTL, beat=False)

    assert list(renewal.held) == [0]
    assert renewal.held[0] > held[0]  # lapsed: re-owned, not renewed
    assert await store.watermarks() == before


async def test_a_renewal_with_a_heartbeat_answers_the_nodes_alive(store: Store) -> None:
    await heartbeat(store, "b", ttl_ms=LONG_TTL)
    await heartbeat(store, "c", ttl_ms=200)
    await asyncio.sleep(0.3)

    renewal = await store.renew("a", {}, [0], ttl_ms=LONG_TTL, beat=True)

    assert renewal.alive == ["a", "b"]
    assert list(renewal.held) == [0]
    assert await heartbeat(store, "b", ttl_ms=LONG_TTL) == ["a", "b"]


# -- durability --------------------------------------------------------------


async def test_reopening_keeps_the_data_and_the_partition_count(stores: Stores) -> None:
    first = await stores.open(partitions=8)
    (seq,) = await first.insert_tasks([new_task("kept", options=OPTIONS)])
    schedule, _ = await create_schedule(first)
    claimed = await claim(first, seq)
    held = await acquire(first, "a", [3], ttl_ms=LONG_TTL)
    await set_watermarks(first, "a", {3: (held[3], T0)})
    task = await first.get_task("task-kept")
    await stores.close(first)

    second = await stores.open(partitions=4)

    assert await second.partitions() == 8
    assert await second.get_task("task-kept") == task
    assert await second.get_schedule("nightly") == schedule
    assert (await second.watermarks())[3] == T0
    assert await second.finish([success(claimed, at=T0 + 1)]) == [True]
    (after,) = await second.insert_tasks([new_task("after")])
    assert after > seq
    assert after == await second.max_seq()


# -- operations ------------------------------------------------------------------


async def test_redrive_brings_back_only_failed_tasks_with_attempts_reset(store: Store) -> None:
    dead, alive = await store.insert_tasks([new_task("dead"), new_task("alive")])
    claimed = await claim(store, dead)
    failed = replace(
        retry(claimed, at=T0 + 10, retry_at=T0 + 20), status=Status.FAILED, retry_at_ms=None
    )
    assert await store.finish([failed]) == [True]
    record = await get(store, dead)
    mark = await store.max_mark()

    assert await store.redrive([(dead, record.version - 1)], T0 + 50) == [False]  # stale
    assert await store.redrive([(dead, record.version), (alive, 0)], T0 + 50) == [True, False]

    back = await get(store, dead)
    assert (back.status, back.attempts, back.due_ms) == (Status.PENDING, 0, T0 + 50)
    rows = await store.load_pending([0], due_after=None, due_until=T0 + DAY, mark_after=mark)
    assert [r.seq for r in rows] == [dead]  # the loader sees it again


async def test_priority_changes_only_while_pending(store: Store) -> None:
    (seq,) = await store.insert_tasks([new_task("p")])
    version = (await get(store, seq)).version
    assert await store.set_priority(seq, version + 1, 9) is False
    assert await store.set_priority(seq, version, 9) is True
    assert (await get(store, seq)).options.priority == 9
    running = await claim(store, seq)
    assert await store.set_priority(seq, running.fence, 1) is False


# -- dependencies ------------------------------------------------------------------


def after(name: object, *predecessors: str) -> NewTask:
    return replace(new_task(name), predecessors=predecessors)


async def test_a_dependent_waits_for_every_predecessor_and_counts_each_once(store: Store) -> None:
    a, b, c = await store.insert_tasks(
        [new_task("a"), new_task("b"), after("c", "task-a", "task-b")]
    )
    assert (await get(store, c)).status is Status.BLOCKED
    mark = await store.max_mark()

    assert await store.finish([success(await claim(store, a), at=T0 + 1)]) == [True]
    assert await store.has_propagations(T0 + DAY)
    assert await store.propagate(T0 + 2) == (0, 0, False)
    assert await store.propagate(T0 + 2) == (0, 0, False)  # again: nothing counted twice
    assert not await store.has_propagations(T0 + DAY)
    assert (await get(store, c)).status is Status.BLOCKED

    assert await store.finish([success(await claim(store, b), at=T0 + 3)]) == [True]
    assert await store.propagate(T0 + 4) == (1, 0, False)
    freed = await get(store, c)
    assert (freed.status, freed.due_ms) == (Status.PENDING, T0 + 4)  # due when freed
    rows = await store.load_pending([0], due_after=None, due_until=T0 + DAY, mark_after=mark)
    assert c in [r.seq for r in rows]  # the loader finds it like a new task


async def test_a_failed_predecessor_fails_its_dependents_level_by_level(store: Store) -> None:
    a, b, c = await store.insert_tasks([new_task("a"), after("b", "task-a"), after("c", "task-b")])
    failed = replace(success(await claim(store, a), at=T0 + 1), status=Status.FAILED)
    assert await store.finish([failed]) == [True]

    assert await store.propagate(T0 + 2, limit=1) == (0, 1, True)  # b; c's news is queued
    assert await store.propagate(T0 + 3, limit=1) == (0, 1, False)
    for seq in (b, c):
        record = await get(store, seq)
        assert record.status is Status.UPSTREAM_FAILED and record.completed_ms is not None
    assert "task-a" in ((await get(store, b)).last_error or "")


async def test_dependencies_on_ended_tasks_are_settled_at_insert(store: Store) -> None:
    ok, bad = await store.insert_tasks([new_task("ok"), new_task("bad")])
    await store.finish([success(await claim(store, ok), at=T0 + 1)])
    await store.cancel(bad, (await get(store, bad)).version, T0 + 1)

    x, y, z = await store.insert_tasks(
        [after("x", "task-ok"), after("y", "task-ok", "task-bad"), after("z", "task-x")]
    )
    assert [(await get(store, s)).status for s in (x, y, z)] == [
        Status.PENDING,
        Status.UPSTREAM_FAILED,
        Status.BLOCKED,
    ]
    held = await store.insert_tasks_with_holders([after("w", "task-z"), after("v", "task-ok")])
    assert [h.status for h in held] == [Status.BLOCKED, Status.PENDING]  # as stored
    assert not await store.has_propagations(T0 + DAY)


async def test_predecessors_are_read_with_their_statuses_now(store: Store) -> None:
    a, b, c, free = await store.insert_tasks(
        [new_task("a"), new_task("b"), after("c", "task-b", "task-a"), new_task("free")]
    )
    await store.finish([success(await claim(store, a), at=T0 + 1)])
    await claim(store, b)

    found = await store.predecessors(c)

    assert found == [("task-a", Status.SUCCEEDED), ("task-b", Status.RUNNING)]
    assert found[0].task_id == "task-a" and found[1].status is Status.RUNNING
    assert await store.predecessors(free) == []


async def test_an_unknown_predecessor_rejects_the_insert(store: Store) -> None:
    with pytest.raises(RejectedItems) as rejected:
        await store.insert_tasks([new_task("fine"), after("orphan", "task-nowhere")])
    assert list(rejected.value.errors) == [1]
    assert await store.get_task("task-fine") is None


# -- ordering keys -----------------------------------------------------------------


def in_line(name: object, key: str = "account-7", *, due: int = T0) -> NewTask:
    return replace(new_task(name, due=due), ordering_key=key)


async def claim_all(store: Store, seqs: list[int], *, now: int = T0) -> list[int]:
    claimed = await store.claim([(s, now) for s in seqs], now_ms=now, lease_ms=LEASE, worker_id="w")
    return [c.seq for c in claimed]


async def statuses(store: Store, *seqs: int) -> list[Status]:
    return [(await get(store, s)).status for s in seqs]


async def test_tasks_of_one_key_are_claimed_one_at_a_time_in_due_order(store: Store) -> None:
    # Inserted out of due order, claimed in one batch latest first: only the earliest runs.
    late, early, free = await store.insert_tasks(
        [in_line("late", due=T0), in_line("early", due=T0 - 5), new_task("free")]
    )
    assert await claim_all(store, [late, free, early]) == [free, early]
    assert await statuses(store, late, early) == [Status.WAITING, Status.RUNNING]
    mark = await store.max_mark()

    first = (await store.get_tasks([early]))[0]
    assert await store.finish([success(claimed_of(first), at=T0 + 1)]) == [True]
    assert await store.propagate(T0 + 2) == (1, 0, False)  # late's turn
    assert await statuses(store, late) == [Status.PENDING]
    rows = await store.load_pending([0], due_after=None, due_until=T0 + DAY, mark_after=mark)
    assert late in [r.seq for r in rows]  # the loader finds it again
    assert await claim_all(store, [late], now=T0 + 3) == [late]
    assert await store.propagate(T0 + 4) == (0, 0, False)  # twice: nothing changes


async def test_the_holder_of_an_ordering_key_is_read_by_its_task_id(store: Store) -> None:
    a, b = await store.insert_tasks([in_line("a", due=T0), in_line("b", due=T0 + 1)])
    assert await store.ordering_key_holder("account-7") is None  # nobody claimed yet
    await claim(store, a)
    assert await claim_all(store, [b], now=T0 + 2) == []

    assert await store.ordering_key_holder("account-7") == "task-a"
    assert await store.ordering_key_holder("account-8") is None


async def test_different_keys_are_claimed_together(store: Store) -> None:
    seqs = await store.insert_tasks([in_line(i, key=f"k{i}") for i in range(5)])
    assert sorted(await claim_all(store, seqs)) == seqs


async def test_a_retry_keeps_the_key_and_a_final_failure_passes_it_on(store: Store) -> None:
    a, b = await store.insert_tasks([in_line("a", due=T0), in_line("b", due=T0 + 1)])
    first = await claim(store, a)
    assert await store.finish([retry(first, at=T0 + 2, retry_at=T0 + 100)]) == [True]
    assert await claim_all(store, [b], now=T0 + 10) == []  # a holds the key while pending
    assert await store.propagate(T0 + 10) == (0, 0, False)
    assert await statuses(store, b) == [Status.WAITING]

    second = await claim(store, a, now=T0 + 100)
    failed = replace(success(second, at=T0 + 101), outcome=Outcome.FAILED, status=Status.FAILED)
    assert await store.finish([failed]) == [True]
    assert await store.propagate(T0 + 102) == (1, 0, False)
    assert await claim_all(store, [b], now=T0 + 103) == [b]


async def test_cancelling_the_holder_passes_the_key_on(store: Store) -> None:
    a, b = await store.insert_tasks([in_line("a", due=T0), in_line("b", due=T0 + 1)])
    first = await claim(store, a)
    await store.finish([retry(first, at=T0 + 1, retry_at=T0 + DAY)])  # holds, pending
    assert await claim_all(store, [b], now=T0 + 2) == []
    assert await store.cancel(a, (await get(store, a)).version, T0 + 3)
    assert await store.propagate(T0 + 4) == (1, 0, False)
    assert await claim_all(store, [b], now=T0 + 5) == [b]


async def test_a_task_not_yet_due_does_not_hold_up_its_key(store: Store) -> None:
    later, now = await store.insert_tasks([in_line("later", due=T0 + DAY), in_line("now", due=T0)])
    assert await claim_all(store, [now]) == [now]
    assert await statuses(store, later) == [Status.PENDING]


def claimed_of(record: TaskRecord) -> ClaimedTask:
    """The claim a running record was made by (its version is the fence)."""
    return ClaimedTask(
        record.seq,
        record.task_id,
        record.task_type,
        record.payload,
        record.attempts,
        record.version,
        record.due_ms,
        record.lease_expires_ms or 0,
        record.options.timeout_seconds,
        record.options,
    )


async def test_a_cancelled_running_holder_keeps_its_key_until_its_lease_ends(store: Store) -> None:
    a, b = await store.insert_tasks([in_line("a", due=T0), in_line("b", due=T0 + 1)])
    running = await claim(store, a)  # its lease runs to T0 + LEASE
    assert await store.cancel(a, running.fence, T0 + 2)
    assert await store.propagate(T0 + 3) == (0, 0, False)  # its attempt may still run
    assert await claim_all(store, [b], now=T0 + 4) == []
    assert not await store.has_propagations(T0 + 5)
    assert await store.has_propagations(T0 + LEASE)
    assert await store.propagate(T0 + LEASE) == (1, 0, False)  # the lease ended: b's turn
    assert await claim_all(store, [b], now=T0 + LEASE + 1) == [b]


async def test_a_waiting_task_gets_its_turn_whatever_the_resolvers_clock(store: Store) -> None:
    a, b = await store.insert_tasks([in_line("a", due=T0), in_line("b", due=T0 + 10)])
    first = await claim(store, a)
    assert await claim_all(store, [b], now=T0 + 10) == []  # waiting
    await store.finish([success(first, at=T0 + 11)])
    assert await store.propagate(T0 + 5) == (1, 0, False)  # a clock behind the claimer's
    assert await claim_all(store, [b], now=T0 + 12) == [b]


async def test_racing_claims_of_one_key_admit_one_task(store: Store, stores: Stores) -> None:
    other = await stores.open()
    seqs = await store.insert_tasks([in_line(i, key="k", due=T0 + i) for i in range(10)])
    items = [(s, T0 + 20) for s in seqs]
    for _ in range(3):  # several rounds: each time at most one holder, the earliest
        mine, theirs = await asyncio.gather(
            store.claim(items, now_ms=T0 + 20, lease_ms=LEASE, worker_id="w1"),
            other.claim(items[::-1], now_ms=T0 + 20, lease_ms=LEASE, worker_id="w2"),
        )
        running = [r for r in await store.get_tasks(seqs) if r.status is Status.RUNNING]
        assert [r.seq for r in running] == [seqs[0]]
        assert len(mine) + len(theirs) <= 1


async def test_a_dependent_inserted_while_its_predecessor_ends_is_told(
    store: Store, stores: Stores
) -> None:
    """Insert dependents and end their predecessor at the same moment, many times: each
    dependent ends up pending (told), never blocked behind a finished predecessor."""
    other = await stores.open()
    for round_ in range(10):
        (pred,) = await store.insert_tasks([new_task(f"p{round_}")])
        running = await claim(store, pred)
        _, dependents = await asyncio.gather(
            other.finish([success(running, at=T0 + 1)]),
            store.insert_tasks([after(f"d{round_}-{i}", f"task-p{round_}") for i in range(5)]),
        )
        while (await store.propagate(T0 + 2)).more:
            pass
        assert {(await get(store, d)).status for d in dependents} == {Status.PENDING}


# -- operators' reads ----------------------------------------------------------


def created(name: object, at: int, **kwargs: Any) -> NewTask:
    return replace(new_task(name, **kwargs), created_ms=at)


async def listed_ids(store: Store, where: TaskFilter, before: int | None = None) -> list[str]:
    return [r.task_id for r in await store.list_tasks(where, before_seq=before, limit=100)]


async def test_list_tasks_by_queue(store: Store) -> None:
    await store.insert_tasks(
        [new_task("a", options=OPTIONS), new_task("b"), new_task("c", options=OPTIONS)]
    )

    assert await listed_ids(store, TaskFilter(queue="emails")) == ["task-c", "task-a"]
    assert await listed_ids(store, TaskFilter(queue="default")) == ["task-b"]
    assert await listed_ids(store, TaskFilter(queue="emails", task_type="other")) == []


async def test_list_tasks_created_in_a_range_is_half_open(store: Store) -> None:
    # In several inserts, as tasks arrive: seqs follow creation time.
    for minute in range(10):
        await store.insert_tasks([created(f"{minute}-{i}", T0 + minute * 60_000) for i in range(3)])

    def between(after: int | None, before: int | None) -> TaskFilter:
        return TaskFilter(created_after_ms=after, created_before_ms=before)

    got = await listed_ids(store, between(T0 + 2 * 60_000, T0 + 5 * 60_000))
    assert got == [f"task-{m}-{i}" for m in (4, 3, 2) for i in (2, 1, 0)]
    assert len(await listed_ids(store, between(T0 + 7 * 60_000, None))) == 9
    assert len(await listed_ids(store, between(None, T0 + 60_000))) == 3
    assert len(await listed_ids(store, between(T0 + 30_000, T0 + 60_001))) == 3
    assert await listed_ids(store, between(T0 + 10 * 60_000, None)) == []
    assert await listed_ids(store, between(None, T0)) == []
    assert await listed_ids(store, between(T0 + 5 * 60_000, T0 + 5 * 60_000)) == []


async def test_list_tasks_created_in_a_range_pages_and_combines(store: Store) -> None:
    for minute in range(6):
        await store.insert_tasks(
            [
                created(f"{minute}-{i}", T0 + minute * 60_000, task_type=f"t{i % 2}")
                for i in range(4)
            ]
        )
    where = TaskFilter(created_after_ms=T0 + 60_000, created_before_ms=T0 + 4 * 60_000)

    seen: list[str] = []
    before: int | None = None
    while True:
        page = await store.list_tasks(where, before_seq=before, limit=5)
        seen += [r.task_id for r in page]
        if len(page) < 5:
            break
        before = page[-1].seq

    assert seen == [f"task-{m}-{i}" for m in (3, 2, 1) for i in (3, 2, 1, 0)]
    typed = await listed_ids(store, replace(where, task_type="t1"))
    assert typed == [f"task-{m}-{i}" for m in (3, 2, 1) for i in (3, 1)]


async def test_list_tasks_created_in_a_range_of_an_empty_store(store: Store) -> None:
    where = TaskFilter(created_after_ms=T0, created_before_ms=T0 + DAY)
    assert await listed_ids(store, where) == []


async def test_list_tasks_by_id_or_idempotency_key(store: Store) -> None:
    await store.insert_tasks([keyed("a", "order-1"), new_task("b"), keyed("c", "order-2")])
    await store.insert_tasks([replace(keyed("d", "order-1"), task_type="other")])

    assert await listed_ids(store, TaskFilter(q="task-b")) == ["task-b"]
    assert await listed_ids(store, TaskFilter(q="order-1")) == ["task-d", "task-a"]
    assert await listed_ids(store, TaskFilter(q="order-1", task_type="noop")) == ["task-a"]
    assert await listed_ids(store, TaskFilter(q="nothing")) == []


async def test_list_workflows_newest_first_with_their_tasks_counted(store: Store) -> None:
    for name, at in (("w1", T0), ("w2", T0 + 1), ("w3", T0 + 1)):
        tasks = [replace(new_task(f"{name}-{i}"), workflow_id=name) for i in range(3)]
        assert await store.insert_workflow(WorkflowRecord(name, f"flow {name}", at), tasks)
    (seq,) = [
        r.seq for r in await store.list_tasks(TaskFilter(q="task-w3-0"), before_seq=None, limit=1)
    ]
    await store.finish([success(await claim(store, seq), at=T0 + 2)])

    first = await store.list_workflows(before=None, limit=2)

    assert [w.record for w in first] == [
        WorkflowRecord("w3", "flow w3", T0 + 1),
        WorkflowRecord("w2", "flow w2", T0 + 1),
    ]
    assert first[0].counts == {Status.SUCCEEDED: 1, Status.PENDING: 2}
    assert first[1].counts == {Status.PENDING: 3}
    rest = await store.list_workflows(before=Page(T0 + 1, "w2"), limit=2)
    assert [w.record.workflow_id for w in rest] == ["w1"]
    assert await store.list_workflows(before=Page(T0, "w1"), limit=2) == []


async def test_list_schedules_with_their_current_and_previous_instance(store: Store) -> None:
    nightly, first = await create_schedule(store, "nightly")
    (second,) = await store.advance_schedules(
        [Advance(nightly, instance(nightly, T0 + DAY), None, None)]
    )
    assert second is not None
    await store.finish([success(await claim(store, first), at=T0 + 5)])
    await create_schedule(store, "paused")
    await store.set_schedule_status("paused", "paused")
    await create_schedule(store, "gone")
    await store.set_schedule_status("gone", "cancelled")

    everything = await store.list_schedules(
        statuses={"active", "paused", "cancelled"}, before=None, limit=10
    )
    active = await store.list_schedules(statuses={"active"}, before=None, limit=10)

    # All made at T0: newest first falls back on the id, descending.
    assert [s.schedule.schedule_id for s in everything] == ["paused", "nightly", "gone"]
    (summary,) = active
    assert summary.schedule == await store.get_schedule("nightly")
    assert summary.current == InstanceBrief(f"nightly@{T0 + DAY}", Status.PENDING, T0 + DAY, None)
    assert summary.previous == InstanceBrief(f"nightly@{T0}", Status.SUCCEEDED, T0, T0 + 5)
    assert everything[0].previous is None
    below = await store.list_schedules(
        statuses={"active", "paused"}, before=Page(T0, "paused"), limit=10
    )
    assert [s.schedule.schedule_id for s in below] == ["nightly"]


async def test_scheduler_nodes_and_lease_holders_alive_by_the_stores_clock(store: Store) -> None:
    await heartbeat(store, "a", ttl_ms=LONG_TTL)
    await heartbeat(store, "gone", ttl_ms=-1)
    held = await acquire(store, "a", [0, 1], ttl_ms=LONG_TTL)
    await acquire(store, "b", [2], ttl_ms=LONG_TTL)
    await acquire(store, "lapsed", [3], ttl_ms=-1)

    nodes = await store.scheduler_nodes()
    holders = await store.lease_holders()

    assert [n.node_id for n in nodes] == ["a"]
    assert [(h.partition, h.owner, h.epoch) for h in holders] == [
        (0, "a", held[0]),
        (1, "a", held[1]),
        (2, "b", 1),
    ]
    assert all(h.expires_ms == holders[0].expires_ms for h in holders[:2])
    assert nodes[0].expires_ms >= holders[0].expires_ms - LONG_TTL


async def test_workers_alive_with_their_running_tasks(store: Store) -> None:
    home = WorkerBeat("w1", "in_process", ("default", "emails"), 8)
    await store.worker_seen(home, ttl_ms=LONG_TTL)
    await store.worker_seen(WorkerBeat("w2", "http", ("reports",), None), ttl_ms=LONG_TTL)
    await store.worker_seen(WorkerBeat("w3", "http", ("x",), None), ttl_ms=-1)  # lapsed
    a, b, c = await store.insert_tasks([new_task(i) for i in "abc"])
    await claim(store, a, worker="w1")
    await claim(store, b, worker="w1")
    await store.finish([success(await claim(store, c, worker="w2"), at=T0 + 1)])

    w1, w2 = await store.live_workers()

    assert (w1.worker_id, w1.kind, w1.queues, w1.concurrency, w1.inflight) == (
        "w1",
        "in_process",
        ("default", "emails"),
        8,
        2,
    )
    assert (w2.worker_id, w2.kind, w2.queues, w2.concurrency, w2.inflight) == (
        "w2",
        "http",
        ("reports",),
        None,
        0,
    )
    assert w1.started_ms == w1.seen_ms and w1.expires_ms == w1.seen_ms + LONG_TTL


async def test_a_worker_report_keeps_its_start_and_queues_until_it_lapses(store: Store) -> None:
    await store.worker_seen(WorkerBeat("w", "http", ("a", "b"), None), ttl_ms=LONG_TTL)
    (first,) = await store.live_workers()
    await asyncio.sleep(0.01)
    await store.worker_seen(WorkerBeat("w", "http", None, None), ttl_ms=LONG_TTL)  # a heartbeat
    (again,) = await store.live_workers()
    assert (again.started_ms, again.queues) == (first.started_ms, ("a", "b"))
    assert again.seen_ms > first.seen_ms

    await store.worker_seen(WorkerBeat("w", "http", None, None), ttl_ms=-1)  # lapsed
    assert await store.live_workers() == []
    await asyncio.sleep(0.01)
    await store.worker_seen(WorkerBeat("w", "http", ("c",), None), ttl_ms=LONG_TTL)
    (back,) = await store.live_workers()
    assert back.started_ms > first.started_ms and back.queues == ("c",)


async def test_a_worker_says_its_task_types_with_its_queues(store: Store) -> None:
    typed = WorkerBeat("w", "in_process", ("default",), 4, ("greet", "noop"))
    await store.worker_seen(typed, ttl_ms=LONG_TTL)
    await store.worker_seen(WorkerBeat("any", "http", ("default",), None), ttl_ms=LONG_TTL)
    any_type, w = await store.live_workers()
    assert (w.task_types, any_type.task_types) == (("greet", "noop"), None)

    await store.worker_seen(WorkerBeat("w", "http", None, None), ttl_ms=LONG_TTL)  # a heartbeat
    assert (await store.live_workers())[1].task_types == ("greet", "noop")
    await store.worker_seen(WorkerBeat("w", "http", ("default",), None), ttl_ms=LONG_TTL)
    assert (await store.live_workers())[1].task_types is None  # said again: any type now


async def test_a_worker_that_leaves_is_gone_at_once(store: Store) -> None:
    await store.worker_seen(WorkerBeat("w", "in_process", ("default",), 4), ttl_ms=LONG_TTL)
    await store.worker_left("w")
    await store.worker_left("never-seen")
    assert await store.live_workers() == []


# -- counting for the dashboard ----------------------------------------------


async def test_count_by_status_counts_every_stored_status_and_the_due_pending(
    store: Store,
) -> None:
    seqs = await store.insert_tasks(
        [
            new_task("due-by-watermark", due=T0, partition=0),
            new_task("later", due=T0 + DAY, partition=0),
            new_task("other-partition", due=T0, partition=1),
            new_task("running", due=T0, partition=2),
            new_task("done", due=T0, partition=2),
            new_task("cancelled", due=T0, partition=2),
        ]
    )
    await claim(store, seqs[3])
    await store.finish([success(await claim(store, seqs[4]), at=T0 + 5)])
    await store.cancel(seqs[5], (await get(store, seqs[5])).version, T0)
    held = await acquire(store, "a", [0], ttl_ms=LONG_TTL)
    assert await set_watermarks(store, "a", {0: (held[0], T0)}) == set()

    counts = await store.count_by_status()

    assert {s: n for s, n in counts.items() if n} == {
        Status.PENDING: 3,
        Status.READY: 1,  # of the pending: due at or below partition 0's watermark
        Status.RUNNING: 1,
        Status.SUCCEEDED: 1,
        Status.CANCELLED: 1,
    }


async def test_the_store_clock_is_this_hosts_within_a_second(store: Store) -> None:
    """Every node keeps time by the store's clock; here the store runs on this host."""
    before = time.time_ns() // 1_000_000
    now = await store.now_ms()
    after = time.time_ns() // 1_000_000
    assert before - 1_000 <= now <= after + 1_000
