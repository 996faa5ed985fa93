"""Applying the PostgreSQL store's migrations (`migrations/*.sql`), one migrator at a time."""

from __future__ import annotations

from importlib import resources

from tickwheel.storage.postgres.steps import Db

MIGRATION_LOCK = 7_421_001  # an advisory lock id: one migrator at a time


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
