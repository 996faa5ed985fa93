"""The PostgreSQL store's plumbing: the pool, its transactions (retried after a lost
deadlock or a connection lost before COMMIT), opening and closing, and the store's
clock. The roles (`tasks`, `dispatch`, `schedules`, `cluster`) build on it.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Awaitable, Callable
from typing import Any, TypeVar

import asyncpg

from tickwheel.errors import OutcomeUnknown, StoreUnavailable, StoreUnreachable
from tickwheel.outage import Outage
from tickwheel.storage.base import News, Page
from tickwheel.storage.limit_names import LimitNames
from tickwheel.storage.postgres.failures import Phase, classify, connection_failed
from tickwheel.storage.postgres.migrate import MIGRATION_LOCK, migrate, pending_migrations
from tickwheel.storage.postgres.statistics import InsertStatistics
from tickwheel.storage.postgres.steps import Db, q

log = logging.getLogger(__name__)
T = TypeVar("T")
NEVER = 2**62
DEADLOCK_RETRIES = 5
UNAVAILABLE_RETRIES = 1  # work that failed before COMMIT runs again on a fresh connection
CLOSE_TIMEOUT_SECONDS = 5.0
COMMAND_TIMEOUT_SECONDS = 60.0
PLAN_CACHE_MODE = "force_generic_plan"  # see `_settings`


async def _keep_session(db: asyncpg.Connection) -> None:
    """What a connection going back to the pool needs reset: nothing. Its settings came
    with its startup, advisory locks are taken per transaction and LISTEN has its own
    connection, so asyncpg's default reset (advisory unlock, CLOSE ALL, UNLISTEN, RESET
    ALL) would only cost a round trip per statement, which a far store makes dear. A
    transaction left open is still rolled back by asyncpg before this runs."""


def _interrupted(phase: Phase, *, atomic: bool) -> StoreUnavailable:
    """What work interrupted in `phase` did: nothing before COMMIT was sent (the
    connection is terminated, so the server rolls back); after, nobody knows."""
    if phase is Phase.COMMIT or (phase is Phase.WORK and not atomic):
        return OutcomeUnknown("the node is stopping: the change may or may not have been made")
    return StoreUnavailable("the node is stopping: nothing was stored")


async def first_seq_created(db: Db, at_ms: int | None) -> int | None:
    if at_ms is None:
        return None
    return int(await db.fetchval(q("first_seq_created"), at_ms))


def below(before: Page | None) -> tuple[int, str]:
    """The bound of a newest-first page by (created time, id)."""
    return (NEVER, "") if before is None else (before.created_ms, before.key)


class PostgresBase:
    """What every role of the store shares: the pool and its transactions."""

    def __init__(
        self,
        url: str,
        *,
        partitions: int = 256,
        schema: str | None = None,
        pool_size: int = 10,
        migrate: bool = True,
        application_name: str = "tickwheel",
        health: Outage | None = None,
        generic_plans: bool = False,
    ) -> None:
        """`health`: where the store's failures and answers are told (its own if None).
        `generic_plans`: for a process that runs only the engine's keyed statements (a
        worker's, a scheduler's), see `_settings`."""
        self.url = url
        self._generic_plans = generic_plans
        self._application_name = application_name[:63]  # PostgreSQL keeps 63 bytes
        self.health = health or Outage("the store", log)
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
        self._limit_names = LimitNames(self._limited_names)

    def _settings(self) -> dict[str, str]:
        """Every connection names its process (`application_name`), so operators and
        tests can find Tickwheel's connections in `pg_stat_activity`.

        Generic plans, if asked for: each statement is prepared once per connection and
        run many times, and `tasks` is partitioned. By default PostgreSQL then plans
        every run anew, since a plan made for the run's values prunes partitions while
        planning and so always looks cheaper than a generic one, which prunes while
        running; in a burst that replanning was about a third of PostgreSQL's CPU per
        task (BENCHMARKS.md, "A burst, process by process"). Only for processes without
        the API: an operator's listings (`LIMIT $n`, joins over labels or executions)
        are planned best for their values."""
        settings = {"application_name": self._application_name}
        if self._generic_plans:
            settings["plan_cache_mode"] = PLAN_CACHE_MODE
        if self._schema:
            settings["search_path"] = self._schema
        return settings

    async def open(self) -> None:
        settings = self._settings()
        try:
            # A statement that hangs (a half-open connection) fails, not stalls a loop.
            self._pool = await asyncpg.create_pool(
                self.url,
                min_size=1,
                max_size=self._pool_size,
                server_settings=settings,
                command_timeout=COMMAND_TIMEOUT_SECONDS,
                reset=_keep_session,
            )
        except Exception as error:
            if not connection_failed(error):
                raise
            raise StoreUnreachable(f"the PostgreSQL store cannot be reached: {error}") from error
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
            result = await self._attempts(work, atomic=atomic)
            self.health.succeeded()
            return result
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
                self.health.failed(failure)
                raise failure from error
            except asyncio.CancelledError:
                if task in self._interrupted:
                    raise _interrupted(phase, atomic=atomic) from None
                raise

    async def _fetch(self, name: str, *args: Any) -> list[asyncpg.Record]:
        return await self._transaction(lambda db: db.fetch(q(name), *args), atomic=False)

    async def _fetchval(self, name: str, *args: Any) -> Any:
        return await self._transaction(lambda db: db.fetchval(q(name), *args), atomic=False)

    async def _limited_names(self) -> list[tuple[str, str]]:
        return [(r[0], r[1]) for r in await self._fetch("limited_names")]

    async def _analyze_tasks(self) -> int:
        async def work(db: Db) -> int:
            # From a small sample: with the default one, these took a quarter of
            # PostgreSQL's CPU time in a burst of 60,000 tasks.
            await db.execute("SET LOCAL default_statistics_target = 10")
            await db.execute("ANALYZE tasks")
            return int(await db.fetchval(q("estimated_tasks")))

        return await self._transaction(work)

    async def partitions(self) -> int:
        return self._partitions

    async def now_ms(self) -> int:
        return int(await self._fetchval("now_ms"))
