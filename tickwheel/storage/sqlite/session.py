"""An SQLite connection and what it keeps between works, where the connection lives.

It lives on a thread of the process driving it (`connection.ThreadHost`), or in a process
of its own (`writer_process.py`); works reach it as calls on a `Session`, picklable for
the second.
"""

from __future__ import annotations

import functools
import sqlite3
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, TypeVar

from tickwheel.errors import StorageFull, StoreUnavailable

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
RowFactory = Callable[[sqlite3.Cursor, tuple[Any, ...]], Any]


@dataclass
class Outcome:
    """How one work of a group ended: its value, or what it raised."""

    value: Any = None
    error: Exception | None = None


class Session:
    """An sqlite3 connection and what it keeps between works. It lives where the
    connection lives: on a thread of this process, or in a process of its own
    (`writer_process.py`), which is why works reach it as picklable calls."""

    def __init__(self, path: str, row_factory: RowFactory = sqlite3.Row) -> None:
        self._path = path
        self._row_factory = row_factory
        self._db: sqlite3.Connection | None = None
        self._synchronous = "FULL"

    def connect(self) -> None:
        try:
            self._db = self._connected()
        except sqlite3.OperationalError as error:
            raise unavailable(error) from error

    def _connected(self) -> sqlite3.Connection:
        db = sqlite3.connect(self._path, isolation_level=None, check_same_thread=False)
        db.row_factory = self._row_factory  # read by column name (rows.py), as asyncpg's
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
        return db

    def call(self, work: Callable[[sqlite3.Connection], T]) -> T:
        """`work` on the connection (opened first if it is not)."""
        if self._db is None:
            self.connect()
        assert self._db is not None
        try:
            return _value_of(work(self._db))
        except sqlite3.OperationalError as error:  # locked, disk full, I/O: try again later
            raise unavailable(error) from error

    def commit_group(self, works: list[tuple[Work, bool]]) -> list[Outcome]:
        """Works (each with whether it is acknowledged to a client) in one transaction."""
        return self.call(functools.partial(self._group, works=works))

    def _group(self, db: sqlite3.Connection, *, works: list[tuple[Work, bool]]) -> list[Outcome]:
        level = "FULL" if any(acknowledged for _, acknowledged in works) else "NORMAL"
        if level != self._synchronous:
            db.execute(f"PRAGMA synchronous = {level}")
            self._synchronous = level
        if len(works) == 1:
            return [_only(db, works[0][0])]
        return _in_transaction(db, lambda db: [_in_savepoint(db, work) for work, _ in works])

    def interrupt(self) -> None:
        if self._db is not None:
            self._db.interrupt()

    def close(self) -> None:
        if self._db is not None:
            self._db.close()
            self._db = None


def unavailable(error: sqlite3.OperationalError) -> StoreUnavailable:
    """What an operational error means to the caller. Nothing was changed: a statement
    or COMMIT that fails is undone whole (`_in_transaction` rolls back what SQLite
    leaves open), so the outcome is never unknown here."""
    if getattr(error, "sqlite_errorcode", None) == sqlite3.SQLITE_FULL:
        return StorageFull(f"the SQLite store's disk is full: {error}")
    return StoreUnavailable(f"the SQLite store cannot answer: {error}")


def _value_of(value: T) -> T:
    """What a work answers. One that ends on `db.execute(...)` answers nothing by its
    cursor, which could not be sent back from a writer's process."""
    return None if isinstance(value, sqlite3.Cursor) else value  # type: ignore[return-value]


def _only(db: sqlite3.Connection, work: Work) -> Outcome:
    """A group of one: its own transaction, no savepoint."""
    try:
        return Outcome(_value_of(_in_transaction(db, work)))
    except sqlite3.OperationalError:
        raise  # the store's failure (`Session.call` names it)
    except Exception as error:
        return Outcome(error=error)


def _in_savepoint(db: sqlite3.Connection, work: Work) -> Outcome:
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
        return Outcome(error=error)
    db.execute("RELEASE work")
    return Outcome(_value_of(value))


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
