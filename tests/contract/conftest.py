"""Fixtures of the store contract suite: every test runs once per backend.

A backend is a way to open stores on one fresh database. A new backend (PostgreSQL,
...) adds an opener to OPENERS; the tests talk to the `Store` interface only.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Awaitable, Callable
from pathlib import Path

import pytest

from tickwheel.storage.base import Store
from tickwheel.storage.sqlite.store import SqliteStore

PARTITIONS = 8

# (database, partitions) -> an open store on that database.
Opener = Callable[[Path, int], Awaitable[Store]]


async def open_sqlite(folder: Path, partitions: int) -> Store:
    store = SqliteStore(str(folder / "t.db"), partitions=partitions)
    await store.open()
    return store


OPENERS: dict[str, Opener] = {"sqlite": open_sqlite}


class Stores:
    """Opens stores of one backend on one fresh database; closes those left open."""

    def __init__(self, opener: Opener, database: Path) -> None:
        self._opener = opener
        self._database = database
        self._open: list[Store] = []

    async def open(self, *, partitions: int = PARTITIONS) -> Store:
        store = await self._opener(self._database, partitions)
        self._open.append(store)
        return store

    async def close(self, store: Store) -> None:
        self._open.remove(store)
        await store.close()

    async def close_all(self) -> None:
        while self._open:
            await self._open.pop().close()


@pytest.fixture(params=sorted(OPENERS))
async def stores(request: pytest.FixtureRequest, tmp_path: Path) -> AsyncIterator[Stores]:
    opened = Stores(OPENERS[request.param], tmp_path)
    yield opened
    await opened.close_all()


@pytest.fixture
async def store(stores: Stores) -> Store:
    return await stores.open()
