"""A worker's heartbeat and its ends change the same running tasks in PostgreSQL at
once; both lock them in seq order, so one waits for the other and neither deadlocks
(a deadlock stalls both for `deadlock_timeout`, a second by default, before one of them
fails and the store tries it again)."""

from __future__ import annotations

import asyncio

import asyncpg

from tickwheel.models import Finish, NewTask, Outcome, ScheduleType, Status
from tickwheel.storage.postgres.store import PostgresStore

NOW = 1_767_225_600_000
TASKS = 60
# Longer than the test waits: a deadlock shows as a timeout, not as a stall and a retry.
DEADLOCK_TIMEOUT = "deadlock_timeout=30s"


async def test_a_heartbeat_and_ends_of_the_same_tasks_never_deadlock(database_url: str) -> None:
    store = PostgresStore(f"{database_url}&{DEADLOCK_TIMEOUT}", partitions=4)
    await store.open()
    try:
        new = [
            NewTask(f"t{i}", i % 4, "noop", {}, ScheduleType.IMMEDIATE, NOW, NOW)
            for i in range(TASKS)
        ]
        seqs = await store.insert_tasks(new)
        claimed = await store.claim(
            [(s, NOW) for s in seqs], now_ms=NOW, lease_ms=30_000, worker_id="w"
        )
        assert len(claimed) == TASKS
        ends = [  # in seq order...
            Finish(t.seq, t.fence, Outcome.SUCCEEDED, Status.SUCCEEDED, ended_ms=NOW + 5)
            for t in sorted(claimed, key=lambda t: t.seq)
        ]
        fences = {t.seq: t.fence for t in sorted(claimed, key=lambda t: -t.seq)}  # ...and not
        # A third session holds the middle task, so that each statement has locked part
        # of the tasks (in its own order, were it not seq order) when the other starts.
        middle = sorted(seqs)[TASKS // 2]
        holder = await asyncpg.connect(database_url)
        try:
            hold = holder.transaction()
            await hold.start()
            await holder.execute("SELECT 1 FROM tasks WHERE seq = $1 FOR UPDATE", middle)
            heartbeat = asyncio.create_task(store.extend_leases(fences, until_ms=NOW + 60_000))
            ending = asyncio.create_task(store.finish(ends))
            await asyncio.sleep(0.3)
            await hold.rollback()
            stale, written = await asyncio.wait_for(asyncio.gather(heartbeat, ending), 10)
        finally:
            await holder.close()
        # Whichever went first, every end was written; the heartbeat either extended a
        # lease or found its task ended.
        assert written == [True] * TASKS
        assert stale <= set(seqs)
        assert {t.status for t in await store.get_tasks(seqs)} == {Status.SUCCEEDED}
    finally:
        await store.close()
