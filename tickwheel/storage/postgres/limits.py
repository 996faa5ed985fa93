"""The PostgreSQL store's limits: setting them, showing their use, and waking what they
hold (the claim side is in `dispatch`)."""

from __future__ import annotations

from tickwheel.core.limits import Limit, Window
from tickwheel.storage.plans import limits as plans
from tickwheel.storage.plans.steps import RunningOf
from tickwheel.storage.postgres.base import PostgresBase
from tickwheel.storage.postgres.steps import Db, PostgresSteps, q, run
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
        async def work(db: Db) -> list[LimitUse]:
            rows = await db.fetch(q("limits_in_use"), limit_id)
            ids = [r["limit_id"] for r in rows]
            running = await PostgresSteps(db).running_of(RunningOf(ids, now_ms)) if ids else {}
            uses = []
            for r in rows:
                limit = plans.limit_of(r)
                window = Window.decode(r["recent_claims"])
                started = 0 if limit.rate is None else window.used(now_ms, limit.rate)
                lid = r["limit_id"]
                uses.append(
                    LimitUse(limit, r["updated_at"], started, running.get(lid, (0,))[0], r["held"])
                )
            return uses

        return await self._transaction(work, atomic=False)

    async def wake_held(self, now_ms: int, *, sweep: bool = False) -> int:
        return await self._transaction(lambda db: run(db, plans.wake(now_ms, sweep=sweep)))

    async def first_wake_ms(self) -> int | None:
        found: int | None = await self._fetchval("first_wake")
        return found
