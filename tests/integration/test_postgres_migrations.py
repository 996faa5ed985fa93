"""The migrations produce exactly the schema in schema.sql, and apply once.

Each side is built in a fresh schema of its own and described from the catalog:
tables and their partitions, columns, indexes, constraints, sequences, functions,
triggers and the ranges of seq made so far. An index of a partition is known by the
partitioned index it belongs to, not by its own name: the first range kept the names
its indexes had before migration 0004 made `tasks` partitioned, where later ranges get
generated names.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from importlib import resources
from typing import Any

import asyncpg
from services import fresh_schema

from tickwheel.storage.postgres.migrate import migrate

Description = dict[str, set[tuple[Any, ...]]]

_package = resources.files("tickwheel.storage.postgres")

_IN_SCHEMA = "relnamespace = current_schema()::regnamespace"

_CATALOG = {
    "tables": f"""
        SELECT c.relname, c.relkind::text, pg_get_partkeydef(c.oid),
               pg_get_expr(c.relpartbound, c.oid), p.relname
        FROM pg_class AS c
        LEFT JOIN pg_inherits AS i ON i.inhrelid = c.oid
        LEFT JOIN pg_class AS p ON p.oid = i.inhparent
        WHERE c.{_IN_SCHEMA} AND c.relkind IN ('r', 'p') AND c.relname <> 'schema_migrations'
    """,
    "columns": f"""
        SELECT c.relname, a.attnum, a.attname, format_type(a.atttypid, a.atttypmod),
               a.attnotnull, pg_get_expr(d.adbin, d.adrelid)
        FROM pg_attribute AS a
        JOIN pg_class AS c ON c.oid = a.attrelid
        LEFT JOIN pg_attrdef AS d ON d.adrelid = a.attrelid AND d.adnum = a.attnum
        WHERE c.{_IN_SCHEMA} AND c.relkind IN ('r', 'p') AND c.relname <> 'schema_migrations'
          AND a.attnum > 0 AND NOT a.attisdropped
    """,
    "indexes": f"""
        SELECT t.relname, COALESCE('of ' || p.relname, c.relname), c.relname,
               pg_get_indexdef(c.oid)
        FROM pg_index AS x
        JOIN pg_class AS c ON c.oid = x.indexrelid
        JOIN pg_class AS t ON t.oid = x.indrelid
        LEFT JOIN pg_inherits AS i ON i.inhrelid = c.oid
        LEFT JOIN pg_class AS p ON p.oid = i.inhparent
        WHERE t.{_IN_SCHEMA} AND t.relname <> 'schema_migrations'
    """,
    "constraints": f"""
        SELECT t.relname, o.conname, o.contype::text, pg_get_constraintdef(o.oid)
        FROM pg_constraint AS o
        JOIN pg_class AS t ON t.oid = o.conrelid
        WHERE t.{_IN_SCHEMA} AND t.relname <> 'schema_migrations'
    """,
    "sequences": f"""
        SELECT c.relname, format_type(s.seqtypid, NULL), s.seqstart, s.seqincrement,
               t.relname, a.attname
        FROM pg_sequence AS s
        JOIN pg_class AS c ON c.oid = s.seqrelid
        LEFT JOIN pg_depend AS d
          ON d.classid = 'pg_class'::regclass AND d.objid = c.oid AND d.deptype IN ('a', 'i')
         AND d.refclassid = 'pg_class'::regclass
        LEFT JOIN pg_class AS t ON t.oid = d.refobjid
        LEFT JOIN pg_attribute AS a ON a.attrelid = d.refobjid AND a.attnum = d.refobjsubid
        WHERE c.{_IN_SCHEMA}
    """,
    "functions": """
        SELECT p.proname, pg_get_function_identity_arguments(p.oid), pg_get_functiondef(p.oid)
        FROM pg_proc AS p
        WHERE p.pronamespace = current_schema()::regnamespace
    """,
    "triggers": f"""
        SELECT c.relname, g.tgname, pg_get_triggerdef(g.oid)
        FROM pg_trigger AS g
        JOIN pg_class AS c ON c.oid = g.tgrelid
        WHERE c.{_IN_SCHEMA} AND NOT g.tgisinternal
    """,
    "ranges": """
        SELECT lower, upper, opened_at IS NOT NULL, sealed_at IS NOT NULL FROM task_ranges
    """,
}


async def _describe(db: asyncpg.Connection) -> Description:
    """The schema of `db`'s search path, its name left out (definitions qualify names)."""
    qualifier = await db.fetchval("SELECT current_schema()") + "."
    described: Description = {}
    for part, sql in _CATALOG.items():
        rows = [
            tuple(v.replace(qualifier, "") if isinstance(v, str) else v for v in row)
            for row in await db.fetch(sql)
        ]
        described[part] = {_normalized(part, row) for row in rows}
    return described


def _normalized(part: str, row: tuple[Any, ...]) -> tuple[Any, ...]:
    if part == "indexes":  # the definition without the name (a partition's varies)
        table, known_as, name, definition = row
        return table, known_as, definition.replace(f" INDEX {name} ON ", " INDEX ON ")
    if part == "functions":  # spacing aside, a function is its text
        return (*row[:-1], " ".join(row[-1].split()))
    return row


@asynccontextmanager
async def _fresh(*, declared: bool = False) -> AsyncIterator[asyncpg.Connection]:
    """A connection to a fresh schema, where schema.sql has run if `declared`."""
    async with fresh_schema() as url:
        db = await asyncpg.connect(url)
        try:
            if declared:
                await db.execute(_package.joinpath("schema.sql").read_text())
            yield db
        finally:
            await db.close()


def _migration_names() -> list[str]:
    folder = _package.joinpath("migrations")
    return sorted(p.name for p in folder.iterdir() if p.name.endswith(".sql"))


async def test_migrations_match_schema_sql() -> None:
    async with _fresh() as migrated, _fresh(declared=True) as declared:
        async with migrated.transaction():
            assert await migrate(migrated) == _migration_names()
        found, wanted = await _describe(migrated), await _describe(declared)
    for part in _CATALOG:
        assert found[part] == wanted[part], f"{part}: left as migrated, right as declared"


async def test_the_description_sees_each_kind_of_difference() -> None:
    async with _fresh(declared=True) as db:
        before = await _describe(db)
        await db.execute("CREATE UNIQUE INDEX stray ON tasks_r0 (task_id)")
        await db.execute("ALTER TABLE workers ALTER COLUMN concurrency TYPE bigint")
        await db.execute("ALTER TABLE workflows ADD CONSTRAINT named UNIQUE (name)")
        await db.execute(
            "CREATE OR REPLACE FUNCTION tasks_final_to_propagate() RETURNS trigger"
            " LANGUAGE plpgsql AS $$ BEGIN RETURN NULL; END; $$"
        )
        await db.execute("SELECT tickwheel_add_task_range(2 * 67108864)")
        after = await _describe(db)
    changed = {part for part in _CATALOG if before[part] != after[part]}
    assert changed == set(_CATALOG) - {"sequences"}


async def test_migrating_twice_applies_nothing() -> None:
    async with _fresh() as db:
        async with db.transaction():
            assert await migrate(db)
        async with db.transaction():
            assert await migrate(db) == []
