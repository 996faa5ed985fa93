"""The SQLite store's limits: setting them, showing their use, and waking what they
hold (the claim side is in `dispatch`)."""

from __future__ import annotations

import sqlite3

from tickwheel.core.limits import Limit
from tickwheel.storage.plans import limits as plans
from tickwheel.storage.records import LimitUse
from tickwheel.storage.sqlite.base import SqliteBase
from tickwheel.storage.sqlite.queries import as_json, q
from tickwheel.storage.sqlite.steps import planned, run


class SqliteLimits(SqliteBase):
    async def put_limit(self, limit: Limit, now_ms: int) -> None:
        rate = limit.rate
        params = {
            "limit_id": limit.id,
            "scope": str(limit.scope),
            "name": limit.name,
            "rate_count": rate and rate.count,
            "rate_period_ms": rate and rate.period_ms,
            "concurrency": limit.concurrency,
            "now": now_ms,
        }

        def work(db: sqlite3.Connection) -> None:
            db.execute(q("put_limit"), params)
            if limit.concurrency is not None:
                db.execute(q("mark_slot_holders"), {"limit_id": limit.id})
            # What it holds is judged again by the new rule.
            _wake_now(db, limit.id, now_ms)

        await self._writer.transaction(work)
        self._limit_names.changed()

    async def delete_limit(self, limit_id: str, now_ms: int) -> bool:
        def work(db: sqlite3.Connection) -> bool:
            deleted = db.execute(q("delete_limit"), {"limit_id": limit_id}).rowcount
            _wake_now(db, limit_id, now_ms)  # let its tasks go
            return bool(deleted)

        found = await self._writer.transaction(work)
        self._limit_names.changed()
        return found

    async def limits_in_use(self, now_ms: int, limit_id: str | None = None) -> list[LimitUse]:
        return await self._reader.run(lambda db: run(db, plans.in_use(now_ms, limit_id)))

    async def wake_held(self, now_ms: int, *, sweep: bool = False) -> int:
        return await self._writer.transaction(
            planned(plans.wake, now_ms, sweep=sweep), acknowledged=False
        )

    async def first_wake_ms(self) -> int | None:
        found: int | None = await self._reader.run(
            lambda db: db.execute(q("first_wake")).fetchone()[0]
        )
        return found


def _wake_now(db: sqlite3.Connection, limit_id: str, now_ms: int) -> None:
    db.execute(q("wake_later"), {"rows": as_json([(limit_id, now_ms)])})
