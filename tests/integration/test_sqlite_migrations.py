"""The migrations produce exactly the schema in schema.sql, and apply once."""

from __future__ import annotations

import asyncio
import re
import sqlite3
from importlib import resources
from pathlib import Path

from tickwheel.storage.sqlite.connection import migrate
from tickwheel.storage.sqlite.store import SqliteStore


def _schema(db: sqlite3.Connection) -> set[tuple[str, str, str]]:
    rows = db.execute(
        "SELECT type, name, sql FROM sqlite_master"
        " WHERE name NOT LIKE 'sqlite_%' AND name != 'schema_migrations'"
    )
    return {(kind, name, " ".join(_uncommented(sql).split())) for kind, name, sql in rows if sql}


def _uncommented(sql: str) -> str:
    # ALTER TABLE ADD COLUMN splices its text into the stored CREATE TABLE, so spacing
    # around punctuation differs between a migrated and a declared schema.
    text = "\n".join(line.split("--")[0] for line in sql.splitlines())
    return re.sub(r"\s*([(),])\s*", r"\1 ", text)


def test_migrations_match_schema_sql(tmp_path: Path) -> None:
    migrated = sqlite3.connect(tmp_path / "migrated.db", isolation_level=None)
    assert migrate(migrated) == sorted(
        p.name
        for p in resources.files("tickwheel.storage.sqlite").joinpath("migrations").iterdir()
        if p.name.endswith(".sql")
    )
    declared = sqlite3.connect(tmp_path / "declared.db", isolation_level=None)
    declared.executescript(
        resources.files("tickwheel.storage.sqlite").joinpath("schema.sql").read_text()
    )
    assert _schema(migrated) == _schema(declared)


def test_migrating_twice_applies_nothing(tmp_path: Path) -> None:
    db = sqlite3.connect(tmp_path / "twice.db", isolation_level=None)
    assert migrate(db)
    assert migrate(db) == []


async def test_two_processes_opening_a_new_file_at_once_both_succeed(tmp_path: Path) -> None:
    path = str(tmp_path / "race.db")
    stores = [SqliteStore(path, partitions=8) for _ in range(4)]
    await asyncio.gather(*(s.open() for s in stores))
    try:
        assert {await s.partitions() for s in stores} == {8}
        assert len(await stores[0].watermarks()) == 8
    finally:
        for s in stores:
            await s.close()
