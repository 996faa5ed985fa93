"""Opens the store named by a URL. The only place that knows every backend."""

from __future__ import annotations

import asyncio
from typing import Any
from urllib.parse import urlsplit

from tickwheel.errors import StoreUnreachable
from tickwheel.extras import POSTGRES, require
from tickwheel.outage import Outage
from tickwheel.storage.base import Store

RETRY_SECONDS = 1.0  # between tries to reach a store that is not up yet


async def open_store(
    url: str,
    *,
    partitions: int,
    migrate: bool = True,
    name: str = "tickwheel",
    health: Outage | None = None,
    generic_plans: bool = False,
) -> Store:
    """The store at `url`, its schema migrated first unless `migrate` is off (PostgreSQL:
    for deployments that run `tickwheel migrate` as a step of their own). `name` names
    this process's connections where the store shows them (PostgreSQL's
    `application_name`); `health` hears how every call went (the store's own if None);
    `generic_plans`: PostgreSQL plans each prepared statement once (`PostgresStore`)."""
    scheme = urlsplit(url).scheme
    if scheme == "sqlite":
        from tickwheel.storage.sqlite.store import SqliteStore

        path = sqlite_path(url)
        store = SqliteStore(path, partitions=partitions, health=health, writer_process=True)
        await store.open()
        return store
    if scheme in ("postgresql", "postgres"):
        require(POSTGRES)
        from tickwheel.storage.postgres.store import PostgresStore

        pg = PostgresStore(
            url,
            partitions=partitions,
            migrate=migrate,
            application_name=name,
            health=health,
            generic_plans=generic_plans,
        )
        await pg.open()
        return pg
    raise ValueError(
        f"unsupported database URL scheme {scheme!r}: use sqlite:///PATH or postgresql://..."
    )


async def open_store_when_reachable(
    url: str, *, health: Outage, retry_seconds: float = RETRY_SECONDS, **options: Any
) -> Store:
    """`open_store`, waiting for a store that cannot be reached yet (a container started
    before its database, a restart): `health` tells the wait in a few lines. Anything
    else (a wrong password, a schema not migrated) fails at once."""
    while True:
        try:
            store = await open_store(url, health=health, **options)
        except StoreUnreachable as error:
            health.failed(error)
            await asyncio.sleep(retry_seconds)
            continue
        health.succeeded()
        return store


def sqlite_path(url: str) -> str:
    """sqlite:///relative.db, sqlite:////absolute.db, or sqlite:///:memory: (tests)."""
    prefix = "sqlite:///"
    if not url.startswith(prefix) or len(url) == len(prefix):
        raise ValueError("an SQLite URL looks like sqlite:///./tickwheel.db")
    return url[len(prefix) :]
