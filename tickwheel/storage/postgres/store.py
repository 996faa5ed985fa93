"""The distributed store: PostgreSQL through an asyncpg pool.

The same contract as the SQLite store (tests/contract), with what many writers need:
batches bound as arrays (one statement, one round trip), every read-then-write that
must not race taken with a row lock or a per-key advisory lock, the counter of marks
locked to commit so that marks follow commit order, and lease expiry by the server's
clock.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
from collections.abc import Awaitable, Callable, Collection, Mapping, Sequence
from dataclasses import replace
from importlib import resources
from typing import Any, TypeVar

import asyncpg

from tickwheel.errors import OutcomeUnknown, StoreUnavailable
from tickwheel.models import (
    ClaimedTask,
    ExecutionRecord,
    Finish,
    NewTask,
    ScheduleRecord,
    Status,
    TaskRecord,
    WheelEntry,
    WorkflowRecord,
)
from tickwheel.storage import rows as convert
from tickwheel.storage.base import (
    Advance,
    Held,
    LeaseHolder,
    News,
    Page,
    Propagated,
    Renewal,
    SchedulerNode,
    ScheduleSummary,
    TaskFilter,
    TokenRecord,
    WorkerBeat,
    WorkerRecord,
    WorkflowSummary,
)
from tickwheel.storage.listing import task_clauses
from tickwheel.storage.named_queries import TASK_COLUMNS
from tickwheel.storage.plans import attempts, propagation
from tickwheel.storage.plans import inserts as plans
from tickwheel.storage.plans.steps import Claim
from tickwheel.storage.postgres.failures import Phase, classify, connection_failed
from tickwheel.storage.postgres.statistics import InsertStatistics
from tickwheel.storage.postgres.steps import Db, PostgresSteps, changed, columns, q, run

log = logging.getLogger(__name__)
T = TypeVar("T")
NEVER = 2**62
MIGRATION_LOCK = 7_421_001  # an advisory lock id: one migrator at a time
DEADLOCK_RETRIES = 5
UNAVAILABLE_RETRIES = 1  # work that failed before COMMIT runs again on a fresh connection
CLOSE_TIMEOUT_SECONDS = 5.0
COMMAND_TIMEOUT_SECONDS = 60.0


class PostgresStore:
    def __init__(
        self,
        url: str,
        *,
        partitions: int = 256,
        schema: str | None = None,
        pool_size: int = 10,
        migrate: bool = True,
        application_name: str = "tickwheel",
        on_failure: Callable[[StoreUnavailable], None] = lambda error: None,
    ) -> None:
        self.url = url
        self._application_name = application_name[:63]  # PostgreSQL keeps 63 bytes
        self._on_failure = on_failure
        self._schema = schema
        self._wanted_partitions = partitions
        self._partitions = partitions
        self._pool_size = pool_size
        self._migrate = migrate
        self._pool: asyncpg.Pool | None = None
        self._listener: asyncpg.Connection | None = None
        # Lease renewals have a connection of their own: a busy pool never delays them.
        self._lease_db: asyncpg.Connection | None = None
        self._on_news: Callable[[News], None] = lambda news: None
        self._relistening: asyncio.Task[None] | None = None
        self._closing = False
        self._statistics = InsertStatistics(self._analyze_tasks)
        self._running: set[asyncio.Task[Any]] = set()  # tasks in `_transaction`
        self._interrupted: set[asyncio.Task[Any]] = set()

    def _settings(self) -> dict[str, str]:
        """Every connection names its process (`application_name`), so operators and
        tests can find Tickwheel's connections in `pg_stat_activity`."""
        settings = {"application_name": self._application_name}
        if self._schema:
            settings["search_path"] = self._schema
        return settings

    async def open(self) -> None:
        settings = self._settings()
        # A statement that hangs (a half-open connection) fails instead of stalling a loop.
        self._pool = await asyncpg.create_pool(
            self.url,
            min_size=1,
            max_size=self._pool_size,
            server_settings=settings,
            command_timeout=COMMAND_TIMEOUT_SECONDS,
        )
        if self._migrate:
            await self._transaction(migrate)
        elif await self._transaction(pending_migrations):
            await self.close()
            raise StoreUnavailable("the schema is not up to date: run `tickwheel migrate`")
        self._partitions = await self._transaction(self._init_cluster)

    async def _init_cluster(self, db: Db) -> int:
        await db.execute("SELECT pg_advisory_xact_lock($1)", MIGRATION_LOCK)
        found = await db.fetchval("SELECT value FROM cluster WHERE key = 'partitions'")
        if found is not None:
            return int(found)
        count = self._wanted_partitions
        await db.execute(
            "INSERT INTO cluster (key, value) VALUES ('partitions', $1), ('mark', 0)", count
        )
        await db.execute(
            "INSERT INTO partition_leases (partition) SELECT generate_series(0, $1 - 1)", count
        )
        return count

    async def close(self) -> None:
        self._closing = True
        await self._statistics.close()
        if self._relistening is not None:
            self._relistening.cancel()
        if self._listener is not None:
            await self._listener.close()
            self._listener = None
        if self._lease_db is not None:
            self._lease_db.terminate()
            self._lease_db = None
        if self._pool is not None:
            try:  # waits for every connection to be given back
                await asyncio.wait_for(self._pool.close(), CLOSE_TIMEOUT_SECONDS)
            except TimeoutError:
                self._pool.terminate()
            self._pool = None

    def interrupt(self) -> None:
        for task in self._running:
            self._interrupted.add(task)
            task.cancel()

    # -- plumbing ------------------------------------------------------------

    async def _transaction(self, work: Callable[[Db], Awaitable[T]], *, atomic: bool = True) -> T:
        """Run `work` in one transaction; one that lost a deadlock (rolled back whole)
        runs again, and so does one that lost its connection before COMMIT was sent (on
        a fresh connection, once). Work of one statement is atomic by itself
        (`atomic=False`): it saves the round trips of BEGIN and COMMIT, which a far store
        makes dear. Store failures are raised as `StoreUnavailable` (see `failures`)."""
        assert self._pool is not None, "open() the store first"
        task = asyncio.current_task()
        assert task is not None
        self._running.add(task)
        try:
            return await self._attempts(work, atomic=atomic)
        finally:
            self._running.discard(task)
            if task in self._interrupted:  # the cancel was ours, and ended as a store error
                self._interrupted.discard(task)
                task.uncancel()

    async def _attempts(self, work: Callable[[Db], Awaitable[T]], *, atomic: bool) -> T:
        assert self._pool is not None
        deadlocks = unavailable = 0
        task = asyncio.current_task()
        while True:
            phase = Phase.CONNECT
            try:
                async with self._pool.acquire() as db:
                    phase = Phase.WORK
                    try:
                        if not atomic:
                            return await work(db)
                        async with db.transaction():
                            result = await work(db)
                            phase = Phase.COMMIT  # leaving the block sends COMMIT
                        return result
                    except BaseException as error:
                        if connection_failed(error) or task in self._interrupted:
                            # Never back to the pool half way (a lost one is gone already).
                            with contextlib.suppress(asyncpg.InterfaceError):
                                db.terminate()
                        raise
            except (asyncpg.DeadlockDetectedError, asyncpg.SerializationError):
                deadlocks += 1
                if deadlocks == DEADLOCK_RETRIES:
                    raise
                log.warning("a transaction lost a deadlock; running it again")
            except Exception as error:
                failure = classify(error, phase, atomic=atomic)
                if failure is None:
                    raise
                again = type(failure) is StoreUnavailable and unavailable < UNAVAILABLE_RETRIES
                if again and task not in self._interrupted:
                    unavailable += 1
                    continue
                self._on_failure(failure)
                raise failure from error
            except asyncio.CancelledError:
                if task in self._interrupted:
                    raise _interrupted(phase, atomic=atomic) from None
                raise

    async def _fetch(self, name: str, *args: Any) -> list[asyncpg.Record]:
        return await self._transaction(lambda db: db.fetch(q(name), *args), atomic=False)

    async def _fetchval(self, name: str, *args: Any) -> Any:
        return await self._transaction(lambda db: db.fetchval(q(name), *args), atomic=False)

    # -- tasks ---------------------------------------------------------------

    async def insert_tasks(self, tasks: Sequence[NewTask]) -> list[int]:
        return [held.seq for held in await self.insert_tasks_with_holders(tasks)]

    async def insert_tasks_with_holders(self, tasks: Sequence[NewTask]) -> list[Held]:
        held = await self._transaction(lambda db: run(db, plans.insert_tasks(tasks)))
        self._statistics.inserted(len(tasks))
        return held

    async def _analyze_tasks(self) -> int:
        async def work(db: Db) -> int:
            await db.execute("ANALYZE tasks")
            return int(await db.fetchval(q("estimated_tasks")))

        return await self._transaction(work)

    async def propagate(self, now_ms: int, *, limit: int = 1000) -> Propagated:
        return await self._transaction(lambda db: run(db, propagation.propagate(now_ms, limit)))

    async def insert_workflow(self, workflow: WorkflowRecord, tasks: Sequence[NewTask]) -> bool:
        inserted = await self._transaction(
            lambda db: run(db, plans.insert_workflow(workflow, tasks))
        )
        if inserted:  # a workflow of 10,000 tasks is a bulk insert too
            self._statistics.inserted(len(tasks))
        return inserted

    async def get_workflow(
        self, workflow_id: str
    ) -> tuple[WorkflowRecord, list[TaskRecord], list[tuple[int, int]]] | None:
        async def work(db: Db) -> Any:
            row = await db.fetchrow(q("get_workflow"), workflow_id)
            if row is None:
                return None
            tasks = [convert.task(r) for r in await db.fetch(q("workflow_tasks"), workflow_id)]
            edges = await db.fetch(q("edges_into"), [t.seq for t in tasks])
            return convert.workflow(row), tasks, [(e[0], e[1]) for e in edges]

        found: tuple[WorkflowRecord, list[TaskRecord], list[tuple[int, int]]] | None
        found = await self._transaction(work)
        return found

    async def active_workflows(self, workflow_ids: Collection[str]) -> set[str]:
        return {r[0] for r in await self._fetch("active_workflows", list(workflow_ids))}

    async def has_propagations(self, now_ms: int) -> bool:
        return bool(await self._fetchval("has_propagations", now_ms))

    async def get_task(self, task_id: str) -> TaskRecord | None:
        found = await self._fetch("get_task", task_id)
        return convert.task(found[0]) if found else None

    async def get_tasks(self, seqs: Collection[int]) -> list[TaskRecord]:
        return [convert.task(r) for r in await self._fetch("get_tasks", list(seqs))]

    async def list_tasks(
        self, where: TaskFilter, *, before_seq: int | None, limit: int
    ) -> list[TaskRecord]:
        async def work(db: Db) -> list[asyncpg.Record]:
            params: list[Any] = []

            def bind(value: Any) -> str:
                params.append(value)
                return f"${len(params)}"

            clauses = task_clauses(
                where,
                before_seq=before_seq,
                seqs_from=await _first_seq_created(db, where.created_after_ms),
                seqs_below=await _first_seq_created(db, where.created_before_ms),
                bind=bind,
            )
            sql = (
                f"SELECT {TASK_COLUMNS} FROM tasks WHERE {' AND '.join(clauses)}"
                f" ORDER BY seq DESC LIMIT {bind(limit)}"
            )
            return list(await db.fetch(sql, *params))

        return [convert.task(r) for r in await self._transaction(work)]

    async def list_workflows(self, *, before: Page | None, limit: int) -> list[WorkflowSummary]:
        async def work(db: Db) -> list[WorkflowSummary]:
            found = await db.fetch(q("list_workflows"), *_below(before), limit)
            ids = [w[0] for w in found]
            counts = await db.fetch(q("workflow_counts"), ids) if found else []
            return convert.workflow_summaries(found, counts)

        return await self._transaction(work)

    async def history(
        self, *, task_seq: int | None, schedule_id: str | None, before_id: int | None, limit: int
    ) -> list[ExecutionRecord]:
        before = before_id or NEVER
        if schedule_id is not None:
            found = await self._fetch("history_of_schedule", schedule_id, before, limit)
        else:
            found = await self._fetch("history_of_task", task_seq, before, limit)
        return [convert.execution(r) for r in found]

    async def redrive(self, items: Sequence[tuple[int, int]], now_ms: int) -> list[bool]:
        return await self._transaction(lambda db: run(db, attempts.redrive(items, now_ms)))

    async def set_priority(self, seq: int, version: int, priority: int) -> bool:
        return await self._transaction(
            lambda db: run(db, attempts.set_priority(seq, version, priority))
        )

    async def execution_at(self, task_seq: int, fence: int) -> ExecutionRecord | None:
        found = await self._fetch("execution_at_fence", task_seq, fence)
        return convert.execution(found[0]) if found else None

    async def cancel(self, seq: int, version: int, now_ms: int) -> bool:
        return await self._transaction(lambda db: run(db, attempts.cancel(seq, version, now_ms)))

    # -- dispatch ------------------------------------------------------------

    async def load_pending(
        self,
        partitions: Collection[int],
        *,
        due_after: int | None,
        due_until: int,
        mark_after: int | None = None,
    ) -> list[WheelEntry]:
        parts = sorted(partitions)
        if mark_after is None:
            after = -NEVER if due_after is None else due_after
            found = await self._fetch("load_due_range", parts, after, due_until)
        else:
            found = await self._fetch("load_new", parts, mark_after, due_until)
        return [convert.wheel_entry(r) for r in found]

    async def overdue(
        self, partitions: Collection[int], *, due_before: int, limit: int
    ) -> list[WheelEntry]:
        found = await self._fetch("overdue", sorted(partitions), due_before, limit)
        return [convert.wheel_entry(r) for r in found]

    async def max_seq(self) -> int:
        return int(await self._fetchval("max_seq"))

    async def max_mark(self) -> int:
        return int(await self._fetchval("max_mark"))

    async def claim(
        self, items: Sequence[tuple[int, int]], *, now_ms: int, lease_ms: int, worker_id: str
    ) -> list[ClaimedTask]:
        plain = Claim(items, now_ms, now_ms + lease_ms, worker_id, keyed=False)
        # One statement, in a round trip of its own: the tasks with no ordering key.
        found: list[Any] = await self._transaction(
            lambda db: PostgresSteps(db).claim(plain), atomic=False
        )
        if len(found) < len(items):  # cancelled meanwhile, or behind an ordering key
            rest = replace(plain, items=propagation.unclaimed(items, found))
            found += await self._transaction(lambda db: run(db, propagation.claim_keyed(rest)))
        return [convert.claimed(r) for r in found]

    async def extend_leases(self, fences: Mapping[int, int], *, until_ms: int) -> set[int]:
        found = await self._fetch("extend_leases", list(fences), list(fences.values()), until_ms)
        return set(fences) - {r[0] for r in found}

    async def finish(self, finishes: Sequence[Finish]) -> list[bool]:
        ends = attempts.Ends(finishes)
        if ends.retries or ends.repeats:  # new marks: they must commit with the ends
            return await self._transaction(lambda db: run(db, attempts.finish(finishes)))
        # Every attempt ended for good: the ends and their execution rows in one statement.
        outcomes = [str(f.outcome) for f in ends.first.values()]
        written = await self._fetch("end_attempts", *columns(ends.rows(()), 8), outcomes)
        return ends.answers({r[0] for r in written}, [])

    async def subscribe(self, on_news: Callable[[News], None]) -> None:
        self._on_news = on_news
        await self._listen()

    async def _listen(self) -> None:
        """A connection of its own that LISTENs; when it drops (a restart), another is
        made, retrying every second, and meanwhile the engine's own polling covers."""

        def deliver(_: object, __: int, channel: str, ___: object) -> None:
            self._on_news(News(channel))

        self._listener = await asyncpg.connect(self.url, server_settings=self._settings())
        for news in News:
            await self._listener.add_listener(news.value, deliver)
        self._listener.add_termination_listener(lambda _: self._relisten())

    def _relisten(self) -> None:
        if self._closing or self._relistening is not None:
            return

        async def again() -> None:
            while not self._closing:
                try:
                    await self._listen()
                    log.info("listening for news again")
                    break
                except (OSError, asyncpg.PostgresError, asyncpg.InterfaceError):
                    await asyncio.sleep(1.0)
            self._relistening = None

        self._relistening = asyncio.get_running_loop().create_task(again())

    async def expired_leases(
        self, partitions: Collection[int], *, now_ms: int, limit: int
    ) -> list[TaskRecord]:
        found = await self._fetch("expired_leases", sorted(partitions), now_ms, limit)
        return [convert.task(r) for r in found]

    # -- schedules -----------------------------------------------------------

    async def insert_schedule(self, schedule: ScheduleRecord, first: NewTask) -> str:
        return await self._transaction(lambda db: run(db, plans.insert_schedule(schedule, first)))

    async def get_schedule(self, schedule_id: str) -> ScheduleRecord | None:
        found = await self._fetch("get_schedule", schedule_id)
        return convert.schedule(found[0]) if found else None

    async def schedules_of(self, seqs: Collection[int]) -> dict[int, ScheduleRecord]:
        schedules = [convert.schedule(r) for r in await self._fetch("schedules_of", list(seqs))]
        return {s.current_seq: s for s in schedules if s.current_seq is not None}

    async def advance_schedules(self, advances: Sequence[Advance]) -> list[int | None]:
        return await self._transaction(lambda db: run(db, plans.advance_schedules(advances)))

    async def set_schedule_status(
        self, schedule_id: str, status: str, *, only_from: Collection[str] | None = None
    ) -> ScheduleRecord | None:
        only = list(only_from) if only_from is not None else None
        found = await self._fetch("set_schedule_status", schedule_id, status, only)
        return convert.schedule(found[0]) if found else None

    async def list_schedules(
        self, *, statuses: Collection[str], before: Page | None, limit: int
    ) -> list[ScheduleSummary]:
        found = await self._fetch("list_schedules", sorted(statuses), *_below(before), limit)
        return [convert.schedule_summary(r) for r in found]

    # -- API tokens ----------------------------------------------------------

    async def create_token(
        self, token_id: str, token_hash: str, *, name: str, scopes: frozenset[str], now_ms: int
    ) -> None:
        row = (token_id, token_hash, name, ",".join(sorted(scopes)), now_ms)
        await self._transaction(lambda db: db.execute(q("create_token"), *row))

    async def list_tokens(self) -> list[TokenRecord]:
        found = await self._fetch("list_tokens")
        return [TokenRecord(r[0], r[1], frozenset(r[2].split(",")), r[3], r[4]) for r in found]

    async def revoke_token(self, token_id: str, now_ms: int) -> bool:
        return await self._transaction(
            lambda db: _changed_async(db.execute(q("revoke_token"), token_id, now_ms))
        )

    async def active_tokens(self) -> dict[str, frozenset[str]]:
        return {r[0]: frozenset(r[1].split(",")) for r in await self._fetch("active_tokens")}

    # -- ranges of tasks (retention) --------------------------------------------

    async def roll_task_ranges(self, *, period_ms: int) -> int:
        return int(await self._fetchval("roll_task_ranges", period_ms))

    async def drop_expired_task_ranges(self, *, retention_ms: int) -> int:
        return int(await self._fetchval("drop_expired_task_ranges", retention_ms))

    # -- partition leases ----------------------------------------------------

    async def partitions(self) -> int:
        return self._partitions

    async def now_ms(self) -> int:
        return int(await self._fetchval("now_ms"))

    async def release(self, node_id: str, held: Mapping[int, int]) -> None:
        async def work(db: Db) -> None:
            await db.execute(q("release_leases"), node_id, list(held), list(held.values()))
            await db.execute(q("notify"), News.PARTITIONS.value)  # take them at once

        await self._transaction(work)

    async def renew(
        self,
        node_id: str,
        marks: Mapping[int, tuple[int, int]],
        wanted: Collection[int],
        *,
        ttl_ms: int,
        beat: bool,
    ) -> Renewal:
        want = set(wanted)
        parts = sorted(want | set(marks))
        args = (
            node_id,
            ttl_ms,
            parts,
            [marks[p][0] if p in marks else None for p in parts],
            [marks[p][1] if p in marks else None for p in parts],
            [p in want for p in parts],
            beat,
            News.PARTITIONS.value,
        )
        row = await self._lease_fetchrow("renew_leases", *args)
        held = dict(zip(row["partitions"], row["epochs"], strict=True))
        return Renewal(held, sorted([*row["others"], node_id]) if beat else [])

    async def _lease_fetchrow(self, name: str, *args: Any) -> asyncpg.Record:
        """Run one statement on the lease renewals' own connection, opened on first use
        and again after any failure or cancellation (its state is unknown then)."""
        try:
            if self._lease_db is None:
                settings = {"search_path": self._schema} if self._schema else {}
                self._lease_db = await asyncpg.connect(
                    self.url, server_settings=settings, command_timeout=COMMAND_TIMEOUT_SECONDS
                )
            row = await self._lease_db.fetchrow(q(name), *args)
            assert row is not None
            return row
        except BaseException as error:
            if self._lease_db is not None:
                self._lease_db.terminate()
                self._lease_db = None
            if isinstance(
                error, OSError | asyncpg.PostgresConnectionError | asyncpg.InterfaceError
            ):
                raise StoreUnavailable(f"the PostgreSQL store cannot answer: {error}") from error
            raise

    async def leave(self, node_id: str) -> None:
        await self._transaction(lambda db: db.execute(q("leave"), node_id))

    async def watermarks(self) -> dict[int, int]:
        return {r[0]: r[1] for r in await self._fetch("watermarks")}

    async def scheduler_nodes(self) -> list[SchedulerNode]:
        return [SchedulerNode(*r) for r in await self._fetch("scheduler_nodes")]

    async def lease_holders(self) -> list[LeaseHolder]:
        return [LeaseHolder(*r) for r in await self._fetch("lease_holders")]

    # -- workers -------------------------------------------------------------

    async def worker_seen(self, beat: WorkerBeat, *, ttl_ms: int) -> None:
        queues = None if beat.queues is None else json.dumps(list(beat.queues))

        async def work(db: Db) -> None:
            args = (beat.worker_id, beat.kind, queues, beat.concurrency, ttl_ms)
            await db.execute(q("worker_seen"), *args)
            await db.execute(q("forget_dead_workers"))

        await self._transaction(work)

    async def worker_left(self, worker_id: str) -> None:
        await self._transaction(lambda db: db.execute(q("worker_left"), worker_id))

    async def live_workers(self) -> list[WorkerRecord]:
        return [convert.worker(r) for r in await self._fetch("live_workers")]

    async def count_by_status(self) -> dict[Status, int]:
        return {Status(r[0]): r[1] for r in await self._fetch("count_by_status")}


# -- migrations ----------------------------------------------------------------


def _interrupted(phase: Phase, *, atomic: bool) -> StoreUnavailable:
    """What work interrupted in `phase` did: nothing before COMMIT was sent (the
    connection is terminated, so the server rolls back); after, nobody knows."""
    if phase is Phase.COMMIT or (phase is Phase.WORK and not atomic):
        return OutcomeUnknown("the node is stopping: the change may or may not have been made")
    return StoreUnavailable("the node is stopping: nothing was stored")


def _migration_names() -> list[str]:
    folder = resources.files(__package__ or "tickwheel.storage.postgres").joinpath("migrations")
    return sorted(p.name for p in folder.iterdir() if p.name.endswith(".sql"))


async def pending_migrations(db: Db) -> list[str]:
    if await db.fetchval("SELECT to_regclass('schema_migrations')") is None:
        return _migration_names()
    done = {r[0] for r in await db.fetch("SELECT name FROM schema_migrations")}
    return [name for name in _migration_names() if name not in done]


async def migrate(db: Db) -> list[str]:
    """Apply the migrations not applied yet; return their names. An advisory lock lets
    several processes start at once: one applies, the others find them applied."""
    await db.execute("SELECT pg_advisory_xact_lock($1)", MIGRATION_LOCK)
    await db.execute("CREATE TABLE IF NOT EXISTS schema_migrations (name text PRIMARY KEY)")
    folder = resources.files(__package__ or "tickwheel.storage.postgres").joinpath("migrations")
    done = {r[0] for r in await db.fetch("SELECT name FROM schema_migrations")}
    applied = []
    for name in _migration_names():
        if name in done:
            continue
        await db.execute(folder.joinpath(name).read_text())
        await db.execute("INSERT INTO schema_migrations (name) VALUES ($1)", name)
        applied.append(name)
    return applied


# -- the work of one transaction -----------------------------------------------


async def _first_seq_created(db: Db, at_ms: int | None) -> int | None:
    if at_ms is None:
        return None
    return int(await db.fetchval(q("first_seq_created"), at_ms))


def _below(before: Page | None) -> tuple[int, str]:
    """The bound of a newest-first page by (created time, id)."""
    return (NEVER, "") if before is None else (before.created_ms, before.key)


async def _changed_async(command: Awaitable[str]) -> bool:
    return changed(await command)
