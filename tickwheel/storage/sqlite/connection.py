"""One SQLite connection owned by one thread, driven from asyncio.

sqlite3 objects must stay on the thread that made them, and SQLite serialises
writers anyway, so each connection gets a single-thread executor. A whole unit of
work (a transaction of many statements) runs as one call on that thread, so a batch
costs one hop between the event loop and the thread, not one per statement.

Transactions asked for while the thread is busy commit together (group commit): a
commit writes every page the transaction changed to the WAL, and the works of one
moment (a worker's claim, another's ends, a submission) change the same pages, so under
load the thread writes them once rather than once per work.
"""

from __future__ import annotations

import asyncio
import functools
import sqlite3
import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from importlib import resources
from typing import Any, TypeVar

from tickwheel.errors import StorageFull, StoreUnavailable
from tickwheel.outage import Outage

T = TypeVar("T")

CONNECT_RETRIES = 50
# The store checkpoints on a thread of its own (`checkpoints.py`): a writer's COMMIT does
# so only past this many pages of WAL (40 MB at 4 KiB), should that fall behind.
BACKSTOP_PAGES = 10_000
PRAGMAS = (
    # The busy timeout first: switching a new file to WAL needs a lock that another
    # process opening the same file may hold for a moment.
    "PRAGMA busy_timeout = 10000",
    "PRAGMA journal_mode = WAL",
    "PRAGMA synchronous = FULL",
    "PRAGMA foreign_keys = OFF",
    "PRAGMA cache_size = -65536",
    f"PRAGMA wal_autocheckpoint = {BACKSTOP_PAGES}",
)


Work = Callable[[sqlite3.Connection], Any]


def _new_future() -> asyncio.Future[Any]:
    return asyncio.get_running_loop().create_future()


@dataclass
class _Asked:
    """A transaction waiting for the thread, and what its caller awaits."""

    work: Work
    acknowledged: bool
    answer: asyncio.Future[Any] = field(default_factory=_new_future)


@dataclass
class _Outcome:
    """How one work of a group ended: its value, or what it raised."""

    value: Any = None
    error: Exception | None = None


class Connection:
    def __init__(
        self,
        path: str,
        *,
        name: str,
        health: Outage,
    ) -> None:
        self._health = health
        self._executor = ThreadPoolExecutor(max_workers=1, thread_name_prefix=f"sqlite-{name}")
        self._path = path
        self._db: sqlite3.Connection | None = None
        self._synchronous = "FULL"
        self._asked: list[_Asked] = []
        self._committing: asyncio.Task[None] | None = None

    async def open(self) -> None:
        await self.run(self._connect)

    def _connect(self, _: object = None) -> None:
        db = sqlite3.connect(self._path, isolation_level=None, check_same_thread=False)
        db.row_factory = sqlite3.Row  # read by column name (rows.py), as asyncpg's Records
        for pragma in PRAGMAS:
            # Switching a new file to WAL can meet another process doing the same, and
            # SQLite does not wait on that lock even with a busy timeout: retry a while.
            for attempt in range(CONNECT_RETRIES):
                try:
                    db.execute(pragma)
                    break
                except sqlite3.OperationalError:
                    if attempt == CONNECT_RETRIES - 1:
                        raise
                    time.sleep(0.01 * (attempt + 1))
        self._db = db

    async def run(self, work: Callable[[sqlite3.Connection], T]) -> T:
        """Run `work` on the connection's thread; the store's health hears how it went."""
        loop = asyncio.get_running_loop()
        try:
            result = await loop.run_in_executor(self._executor, self._call, work)
        except StoreUnavailable as failure:
            self._health.failed(failure)
            raise
        self._health.succeeded()
        return result

    async def transaction(
        self, work: Callable[[sqlite3.Connection], T], *, acknowledged: bool = True
    ) -> T:
        """Run `work` inside BEGIN IMMEDIATE ... COMMIT (rolled back if it raises).

        Works asked for while the thread is busy share one transaction, each inside its
        own savepoint: one that raises undoes only its own writes, and its caller alone
        gets the error; a failure of the store (an operational error, a failed COMMIT)
        fails every work of the group, none of which then changed anything.

        A write acknowledged to a client (a submission, a cancel) commits with
        `synchronous = FULL`: it survives power loss. The engine's own writes (claims,
        heartbeats, ends of attempts, leases) commit with NORMAL, which in WAL mode
        survives a crash of the process but may lose the last commits on power loss;
        that can only make a task run again, which at-least-once delivery allows. A
        group holding any acknowledged write commits with FULL.
        """
        asked = _Asked(work, acknowledged)
        self._asked.append(asked)
        if self._committing is None:
            self._committing = asyncio.create_task(self._commit_asked())
        result: T = await asked.answer
        return result

    async def _commit_asked(self) -> None:
        """Commit what was asked, a group at a time, until nothing waits."""
        group: list[_Asked] = []
        try:
            while self._asked:
                group, self._asked = self._asked, []
                try:
                    outcomes = await self.run(functools.partial(self._transaction, group=group))
                except Exception as failure:
                    outcomes = [_Outcome(error=failure)] * len(group)
                for asked, outcome in zip(group, outcomes, strict=True):
                    if asked.answer.done():  # its caller was cancelled
                        continue
                    if outcome.error is not None:
                        asked.answer.set_exception(outcome.error)
                    else:
                        asked.answer.set_result(outcome.value)
        except BaseException:  # cancelled (the loop is closing): nobody waits forever
            for asked in group + self._asked:
                asked.answer.cancel()
            raise
        finally:
            self._committing = None

    def _transaction(self, db: sqlite3.Connection, *, group: list[_Asked]) -> list[_Outcome]:
        level = "FULL" if any(asked.acknowledged for asked in group) else "NORMAL"
        if level != self._synchronous:
            db.execute(f"PRAGMA synchronous = {level}")
            self._synchronous = level
        if len(group) == 1:
            return [_only(db, group[0].work)]
        return _in_transaction(db, lambda db: [_in_savepoint(db, a.work) for a in group])

    def _call(self, work: Callable[[sqlite3.Connection], T]) -> T:
        if self._db is None:
            self._connect()
        assert self._db is not None
        try:
            return work(self._db)
        except sqlite3.OperationalError as error:  # locked, disk full, I/O: try again later
            raise unavailable(error) from error

    def interrupt(self) -> None:
        """Make the statement running now fail ("interrupted"); its transaction is
        rolled back. Safe from any thread."""
        if self._db is not None:
            self._db.interrupt()

    async def close(self) -> None:
        if self._db is not None:
            await self.run(lambda db: db.close())
            self._db = None
        self._executor.shutdown(wait=False)


def unavailable(error: sqlite3.OperationalError) -> StoreUnavailable:
    """What an operational error means to the caller. Nothing was changed: a statement
    or COMMIT that fails is undone whole (`_in_transaction` rolls back what SQLite
    leaves open), so the outcome is never unknown here."""
    if getattr(error, "sqlite_errorcode", None) == sqlite3.SQLITE_FULL:
        return StorageFull(f"the SQLite store's disk is full: {error}")
    return StoreUnavailable(f"the SQLite store cannot answer: {error}")


def _only(db: sqlite3.Connection, work: Work) -> _Outcome:
    """A group of one: its own transaction, no savepoint."""
    try:
        return _Outcome(_in_transaction(db, work))
    except sqlite3.OperationalError:
        raise  # the store's failure (`_call` names it)
    except Exception as error:
        return _Outcome(error=error)


def _in_savepoint(db: sqlite3.Connection, work: Work) -> _Outcome:
    """One work of a group. An operational error may have rolled back the whole
    transaction (an interrupt does): it fails the group."""
    db.execute("SAVEPOINT work")
    try:
        value = work(db)
    except sqlite3.OperationalError:
        raise
    except Exception as error:
        db.execute("ROLLBACK TO work")
        db.execute("RELEASE work")
        return _Outcome(error=error)
    db.execute("RELEASE work")
    return _Outcome(value)


def _in_transaction(db: sqlite3.Connection, work: Callable[[sqlite3.Connection], T]) -> T:
    db.execute("BEGIN IMMEDIATE")
    try:
        result = work(db)
        db.execute("COMMIT")
    except BaseException:
        # A COMMIT that failed (disk full, I/O) leaves the transaction open: end it, or
        # the next BEGIN fails too.
        if db.in_transaction:
            db.execute("ROLLBACK")
        raise
    return result


def migrate(db: sqlite3.Connection) -> list[str]:
    """Apply the migrations not applied yet, each in its own transaction; return their names.

    BEGIN IMMEDIATE takes the write lock first, so two processes starting on one new
    file apply each migration once.
    """
    folder = resources.files(__package__).joinpath("migrations")
    names = sorted(p.name for p in folder.iterdir() if p.name.endswith(".sql"))
    applied: list[str] = []
    for name in names:
        db.execute("BEGIN IMMEDIATE")
        try:
            db.execute("CREATE TABLE IF NOT EXISTS schema_migrations (name TEXT PRIMARY KEY)")
            done = db.execute("SELECT 1 FROM schema_migrations WHERE name = ?", (name,)).fetchone()
            if not done:
                for statement in _statements(folder.joinpath(name).read_text()):
                    db.execute(statement)
                db.execute("INSERT INTO schema_migrations (name) VALUES (?)", (name,))
                applied.append(name)
            db.execute("COMMIT")
        except BaseException:
            db.execute("ROLLBACK")
            raise
    return applied


def _statements(script: str) -> list[str]:
    """Split a migration into statements; SQLite itself says where one ends (a trigger's
    body holds semicolons)."""
    statements, current = [], ""
    for line in script.splitlines(keepends=True):
        if not current and line.lstrip().startswith("--"):
            continue
        current += line
        if sqlite3.complete_statement(current):
            statements.append(current.strip())
            current = ""
    if current.strip():
        statements.append(current.strip())  # incomplete: executing it names the fault
    return statements
