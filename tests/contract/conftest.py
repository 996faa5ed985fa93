"""Fixtures of the store contract suite: every test runs once per backend.

A backend is a way to open stores on one fresh database. A new backend (PostgreSQL,
...) adds an opener to OPENERS; the tests talk to the `Store` interface only.
"""

from __future__ import annotations

import hashlib
import sqlite3
from collections.abc import AsyncIterator, Awaitable, Callable
from pathlib import Path

import asyncpg
import pytest
from services import require

from tickwheel.storage.base import Store
from tickwheel.storage.postgres.store import PostgresStore
from tickwheel.storage.sqlite.store import SqliteStore

PARTITIONS = 8

# (database, partitions) -> an open store on that database.
Opener = Callable[[Path, int], Awaitable[Store]]


async def open_sqlite(folder: Path, partitions: int) -> Store:
    # As `tickwheel up` runs it: the writer in a process of its own.
    store = SqliteStore(str(folder / "t.db"), partitions=partitions, writer_process=True)
    await store.open()
    return store


def schema_of(folder: Path) -> str:
    """One fresh PostgreSQL schema per test, named after its temporary folder."""
    return "tw_test_" + hashlib.sha256(str(folder).encode()).hexdigest()[:16]


async def open_postgres(folder: Path, partitions: int) -> Store:
    url = require("postgres")
    db = await asyncpg.connect(url)
    try:
        await db.execute(f"CREATE SCHEMA IF NOT EXISTS {schema_of(folder)}")
    finally:
        await db.close()
    store = PostgresStore(url, partitions=partitions, schema=schema_of(folder), pool_size=4)
    await store.open()
    return store


async def drop_postgres(folder: Path) -> None:
    db = await asyncpg.connect(require("postgres"))
    try:
        await db.execute(f"DROP SCHEMA IF EXISTS {schema_of(folder)} CASCADE")
    finally:
        await db.close()


async def nothing_to_drop(folder: Path) -> None:
    return None


async def refuse_in_sqlite(folder: Path, task_type: str) -> None:
    with sqlite3.connect(folder / "t.db") as db:
        db.execute(
            f"CREATE TRIGGER refuse BEFORE INSERT ON tasks WHEN NEW.task_type = '{task_type}'"
            " BEGIN SELECT RAISE(ABORT, 'refused by the test'); END"
        )


async def refuse_in_postgres(folder: Path, task_type: str) -> None:
    db = await asyncpg.connect(require("postgres"))
    try:
        await db.execute(f"""
            CREATE FUNCTION {schema_of(folder)}.refuse() RETURNS trigger LANGUAGE plpgsql AS $$
            BEGIN RAISE EXCEPTION 'refused by the test'; END $$;
            CREATE TRIGGER refuse BEFORE INSERT ON {schema_of(folder)}.tasks FOR EACH ROW
            WHEN (NEW.task_type = '{task_type}') EXECUTE FUNCTION {schema_of(folder)}.refuse();
        """)
    finally:
        await db.close()


OPENERS: dict[str, Opener] = {"sqlite": open_sqlite, "postgres": open_postgres}
# (database, task type) -> makes the database fail every insert of a task of that type
REFUSERS: dict[str, Callable[[Path, str], Awaitable[None]]] = {
    "sqlite": refuse_in_sqlite,
    "postgres": refuse_in_postgres,
}
DROPPERS: dict[str, Callable[[Path], Awaitable[None]]] = {
    "sqlite": nothing_to_drop,
    "postgres": drop_postgres,
}


class Stores:
    """Opens stores of one backend on one fresh database; closes those left open."""

    def __init__(self, backend: str, database: Path) -> None:
        self._opener = OPENERS[backend]
        self._refuser = REFUSERS[backend]
        self._database = database
        self._open: list[Store] = []

    async def open(self, *, partitions: int = PARTITIONS) -> Store:
        store = await self._opener(self._database, partitions)
        self._open.append(store)
        return store

    async def refuse(self, task_type: str) -> None:
        """Makes the database itself fail any insert of a task of `task_type`, as a full
        disk or a broken connection would, in the middle of a transaction."""
        await self._refuser(self._database, task_type)

    async def close(self, store: Store) -> None:
        self._open.remove(store)
        await store.close()

    async def close_all(self) -> None:
        while self._open:
            await self._open.pop().close()


@pytest.fixture(params=sorted(OPENERS))
async def stores(request: pytest.FixtureRequest, tmp_path: Path) -> AsyncIterator[Stores]:
    opened = Stores(request.param, tmp_path)
    yield opened
    await opened.close_all()
    await DROPPERS[request.param](tmp_path)


@pytest.fixture
async def store(stores: Stores) -> Store:
    return await stores.open()
