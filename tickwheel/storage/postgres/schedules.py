"""The PostgreSQL store's schedule role."""

from __future__ import annotations

from collections.abc import Collection, Sequence

from tickwheel.models import NewTask, ScheduleRecord
from tickwheel.storage import rows as convert
from tickwheel.storage.base import Advance, Page, ScheduleSummary
from tickwheel.storage.plans import inserts as plans
from tickwheel.storage.postgres.base import PostgresBase, below
from tickwheel.storage.postgres.steps import run


class PostgresSchedules(PostgresBase):
    async def insert_schedule(self, schedule: ScheduleRecord, first: NewTask) -> str:
        return await self._transaction(lambda db: run(db, plans.insert_schedule(schedule, first)))

    async def get_schedule(self, schedule_id: str) -> ScheduleRecord | None:
        found = await self._fetch("get_schedule", schedule_id)
        return convert.schedule(found[0]) if found else None

    async def schedules_of(self, seqs: Collection[int]) -> dict[int, ScheduleRecord]:
        schedules = [convert.schedule(r) for r in await self._fetch("schedules_of", list(seqs))]
        return {s.current_seq: s for s in schedules if s.current_seq is not None}

    async def advance_schedules(self, advances: Sequence[Advance]) -> list[int | None]:
        return await self._transaction(lambda db: run(db, plans.advance_schedules(advances)))

    async def set_schedule_status(
        self, schedule_id: str, status: str, *, only_from: Collection[str] | None = None
    ) -> ScheduleRecord | None:
        only = list(only_from) if only_from is not None else None
        found = await self._fetch("set_schedule_status", schedule_id, status, only)
        return convert.schedule(found[0]) if found else None

    async def list_schedules(
        self, *, statuses: Collection[str], before: Page | None, limit: int
    ) -> list[ScheduleSummary]:
        found = await self._fetch("list_schedules", sorted(statuses), *below(before), limit)
        return [convert.schedule_summary(r) for r in found]
