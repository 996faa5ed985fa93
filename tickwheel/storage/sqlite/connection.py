"""One SQLite connection driven from asyncio.

The connection lives on a thread of its own (`ThreadHost`), or in a process of its own
(`writer_process.ProcessHost`). A whole unit of work (a transaction of many statements)
runs as one call there, so a batch costs one hop between the event loop and the
connection, not one per statement.

Transactions asked for while the connection is busy commit together (group commit): a
commit writes every page the transaction changed to the WAL, and the works of one
moment (a worker's claim, another's ends, a submission) change the same pages, so under
load the connection writes them once rather than once per work.
"""

from __future__ import annotations

import asyncio
import functools
import sqlite3
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from importlib import resources
from typing import Any, Protocol, TypeVar

from tickwheel.errors import StoreUnavailable
from tickwheel.outage import Outage
from tickwheel.storage.sqlite.session import Outcome, Session, Work

T = TypeVar("T")


class Host(Protocol):
    """Where a connection's `Session` lives, and how calls reach it."""

    async def start(self) -> None: ...

    async def ask(self, call: Callable[[Session], T]) -> T: ...

    def interrupt(self) -> None: ...

    async def close(self) -> None: ...


def _new_future() -> asyncio.Future[Any]:
    return asyncio.get_running_loop().create_future()


@dataclass
class _Asked:
    """A transaction waiting for the thread, and what its caller awaits."""

    work: Work
    acknowledged: bool
    answer: asyncio.Future[Any] = field(default_factory=_new_future)


@dataclass
class Connection:
    """One SQLite connection driven from asyncio: on a thread of its own, or with
    `own_process`, in a process of its own (`writer_process.py`), where its work
    overlaps the event loop's instead of taking turns with it for the GIL."""

    def __init__(self, path: str, *, name: str, health: Outage, own_process: bool = False) -> None:
        self._health = health
        self._host: Host
        if own_process:
            from tickwheel.storage.sqlite.writer_process import ProcessHost

            self._host = ProcessHost(path, name)
        else:
            self._host = ThreadHost(path, name)
        self._asked: list[_Asked] = []
        self._committing: asyncio.Task[None] | None = None

    async def open(self) -> None:
        """Connect, or fail with `StoreUnavailable` (told by the caller, which knows
        whether a store that cannot open yet is an outage or a wrong path)."""
        await self._host.start()
        try:
            await self._host.ask(Session.connect)
        except BaseException:
            await self._host.close()  # a writer's process would wait for its parent
            raise

    async def run(self, work: Callable[[sqlite3.Connection], T]) -> T:
        """Run `work` on the connection; the store's health hears how it went."""
        result: T = await self._ask(functools.partial(Session.call, work=work))
        return result

    async def _ask(self, call: Callable[[Session], T]) -> T:
        try:
            result = await self._host.ask(call)
        except StoreUnavailable as failure:
            self._health.failed(failure)
            raise
        self._health.succeeded()
        return result

    async def transaction(
        self, work: Callable[[sqlite3.Connection], T], *, acknowledged: bool = True
    ) -> T:
        """Run `work` inside BEGIN IMMEDIATE ... COMMIT (rolled back if it raises).

        Works asked for while the connection is busy share one transaction, each inside
        its own savepoint: one that raises undoes only its own writes, and its caller
        alone gets the error; a failure of the store (an operational error, a failed
        COMMIT) fails every work of the group, none of which then changed anything.

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
                works = [(asked.work, asked.acknowledged) for asked in group]
                try:
                    outcomes = await self._ask(functools.partial(Session.commit_group, works=works))
                except Exception as failure:
                    outcomes = [Outcome(error=failure)] * len(group)
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

    def interrupt(self) -> None:
        """Make the statement running now fail ("interrupted"); its transaction is
        rolled back. Safe from any thread."""
        self._host.interrupt()

    async def close(self) -> None:
        await self._host.close()


class ThreadHost:
    """The session on a single-thread executor of this process: sqlite3 objects must
    stay on the thread that made them, and SQLite serialises writers anyway."""

    def __init__(self, path: str, name: str) -> None:
        self._session = Session(path)
        self._executor = ThreadPoolExecutor(max_workers=1, thread_name_prefix=f"sqlite-{name}")

    async def start(self) -> None:
        """Nothing to start: the executor makes its thread on first use."""

    async def ask(self, call: Callable[[Session], T]) -> T:
        loop = asyncio.get_running_loop()
        return await loop.run_in_executor(self._executor, call, self._session)

    def interrupt(self) -> None:
        self._session.interrupt()

    async def close(self) -> None:
        await self.ask(Session.close)
        self._executor.shutdown(wait=False)


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
