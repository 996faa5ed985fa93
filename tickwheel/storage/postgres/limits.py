"""The PostgreSQL store's limits: setting them, showing their use, and waking what they
hold (the claim side is in `dispatch`)."""

from __future__ import annotations

from tickwheel.core.limits import Limit
from tickwheel.storage.plans import limits as plans
from tickwheel.storage.postgres.base import PostgresBase
from tickwheel.storage.postgres.steps import Db, q, run
from tickwheel.storage.records import LimitUse


class PostgresLimits(PostgresBase):
    async def put_limit(self, limit: Limit, now_ms: int) -> None:
        rate = limit.rate

        async def work(db: Db) -> None:
            args = (limit.id, str(limit.scope), limit.name)
            rule = (rate and rate.count, rate and rate.period_ms, limit.concurrency)
            await db.execute(q("put_limit"), *args, *rule, now_ms)
            if limit.concurrency is not None:
                await db.execute(q("mark_slot_holders"), limit.id)
            # What it holds is judged again by the new rule.
            await db.execute(q("wake_later"), [limit.id], [now_ms])

        await self._transaction(work)
        self._limit_names.changed()

    async def delete_limit(self, limit_id: str, now_ms: int) -> bool:
        async def work(db: Db) -> bool:
            deleted = await db.execute(q("delete_limit"), limit_id)
            await db.execute(q("wake_later"), [limit_id], [now_ms])  # let its tasks go
            return not deleted.endswith(" 0")

        found = await self._transaction(work)
        self._limit_names.changed()
        return found

    async def limits_in_use(self, now_ms: int, limit_id: str | None = None) -> list[LimitUse]:
        plan = plans.in_use
        return await self._transaction(lambda db: run(db, plan(now_ms, limit_id)), atomic=False)

    async def wake_held(self, now_ms: int, *, sweep: bool = False) -> int:
        return await self._transaction(lambda db: run(db, plans.wake(now_ms, sweep=sweep)))

    async def first_wake_ms(self) -> int | None:
        found: int | None = await self._fetchval("first_wake")
        return found
