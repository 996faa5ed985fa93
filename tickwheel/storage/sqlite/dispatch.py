"""The SQLite store's dispatch roles: pending tasks for the loader and attempts
(claims, leases, ends)."""

from __future__ import annotations

import functools
import sqlite3
from collections.abc import Callable, Collection, Mapping, Sequence
from dataclasses import replace
from typing import Any

from tickwheel.models import Finish, TaskRecord, WheelEntry
from tickwheel.storage import rows as convert
from tickwheel.storage.base import News
from tickwheel.storage.claiming import UnboundedClaim
from tickwheel.storage.plans import attempts, limits, propagation
from tickwheel.storage.plans.steps import Claim, Skipped
from tickwheel.storage.records import Claimed
from tickwheel.storage.sqlite.base import SqliteBase
from tickwheel.storage.sqlite.queries import NEVER, as_json, q
from tickwheel.storage.sqlite.steps import claim_params, claim_statement, planned, run


class SqliteDispatch(SqliteBase, UnboundedClaim):
    async def load_pending(
        self,
        partitions: Collection[int],
        *,
        due_after: int | None,
        due_until: int,
        mark_after: int | None = None,
    ) -> list[WheelEntry]:
        parts = as_json(sorted(partitions))
        if mark_after is None:
            name = "load_due_range"
            params: dict[str, Any] = {
                "partitions": parts,
                "due_after": -NEVER if due_after is None else due_after,
                "due_until": due_until,
            }
        else:
            name = "load_new"
            params = {"partitions": parts, "mark_after": mark_after, "due_until": due_until}
        rows = await self._reader.run(lambda db: db.execute(q(name), params).fetchall())
        return [convert.wheel_entry(r) for r in rows]

    async def overdue(
        self, partitions: Collection[int], *, due_before: int, limit: int
    ) -> list[WheelEntry]:
        params = {
            "partitions": as_json(sorted(partitions)),
            "before": due_before,
            "limit": limit,
        }
        found = await self._reader.run(lambda db: db.execute(q("overdue"), params).fetchall())
        return [convert.wheel_entry(r) for r in found]

    async def max_seq(self) -> int:
        return int(await self._reader.run(lambda db: db.execute(q("max_seq")).fetchone()[0]))

    async def max_mark(self) -> int:
        return int(await self._reader.run(lambda db: db.execute(q("max_mark")).fetchone()[0]))

    async def subscribe(self, on_news: Callable[[News], None]) -> None:
        """One file, usually one process: a second process on it finds news by polling."""

    async def claim_some(
        self,
        items: Sequence[tuple[int, int]],
        *,
        now_ms: int,
        lease_ms: int,
        worker_id: str,
        start_now: int | None,
    ) -> Claimed:
        skip = await self._limit_names.current()
        plain = Claim(items, now_ms, now_ms + lease_ms, worker_id, keyed=False, skip=skip)
        work = functools.partial(_claim, plain=plain, start_now=start_now)
        rows, taken = await self._writer.transaction(work, acknowledged=False)
        return Claimed(
            [convert.claimed(r) for r in rows + taken.rows],
            taken.deferred,
            frozenset(r["seq"] for r in taken.rows),
        )

    async def extend_leases(self, fences: Mapping[int, int], *, until_ms: int) -> set[int]:
        params = {"fences": as_json(list(fences.items())), "until": until_ms}
        rows = await self._writer.transaction(
            functools.partial(_fetch_all, name="extend_leases", params=params), acknowledged=False
        )
        return set(fences) - {r[0] for r in rows}

    async def finish(self, finishes: Sequence[Finish]) -> list[bool]:
        return await self._writer.transaction(
            planned(attempts.finish, finishes), acknowledged=False
        )

    async def expired_leases(
        self, partitions: Collection[int], *, now_ms: int, limit: int
    ) -> list[TaskRecord]:
        params = {"partitions": as_json(sorted(partitions)), "now": now_ms, "limit": limit}
        rows = await self._reader.run(lambda db: db.execute(q("expired_leases"), params).fetchall())
        return [convert.task(r) for r in rows]

    async def expire_unstarted(
        self, partitions: Collection[int], *, now_ms: int, limit: int
    ) -> list[TaskRecord]:
        params = {"partitions": as_json(sorted(partitions)), "now": now_ms, "limit": limit}
        rows = await self._writer.transaction(
            lambda db: db.execute(q("expire_unstarted"), params).fetchall(), acknowledged=False
        )
        return [convert.task(r) for r in rows]


# The works of the hot path, as functions of the module: they pickle by reference to the
# writer's process, where a closure would pickle its code.


def _claim(
    db: sqlite3.Connection, *, plain: Claim, start_now: int | None
) -> tuple[list[Any], limits.Taken]:
    rows = db.execute(claim_statement(plain), claim_params(plain)).fetchall()
    if len(rows) == len(plain.items):
        return rows, limits.Taken()
    # Cancelled meanwhile, behind an ordering key, or of a limit.
    rest = replace(plain, items=propagation.unclaimed(plain.items, rows), skip=Skipped())
    if not plain.skip:
        return rows + run(db, propagation.claim_keyed(rest)), limits.Taken()
    return rows, run(db, limits.claim_limited(rest, start_now))


def _fetch_all(db: sqlite3.Connection, name: str, params: dict[str, Any]) -> list[Any]:
    return db.execute(q(name), params).fetchall()
