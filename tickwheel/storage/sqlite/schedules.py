"""The SQLite store's schedule role."""

from __future__ import annotations

import sqlite3
from collections.abc import Collection, Sequence

from tickwheel.models import NewTask, ScheduleRecord
from tickwheel.storage import rows as convert
from tickwheel.storage.base import Advance, Page, ScheduleSummary
from tickwheel.storage.plans import inserts as plans
from tickwheel.storage.sqlite.base import SqliteBase, below
from tickwheel.storage.sqlite.queries import as_json, q
from tickwheel.storage.sqlite.steps import planned


class SqliteSchedules(SqliteBase):
    async def insert_schedule(self, schedule: ScheduleRecord, first: NewTask) -> str:
        return await self._writer.transaction(planned(plans.insert_schedule, schedule, first))

    async def get_schedule(self, schedule_id: str) -> ScheduleRecord | None:
        row = await self._reader.run(
            lambda db: db.execute(q("get_schedule"), (schedule_id,)).fetchone()
        )
        return convert.schedule(row) if row else None

    async def schedules_of(self, seqs: Collection[int]) -> dict[int, ScheduleRecord]:
        arg = as_json(list(seqs))
        rows = await self._reader.run(lambda db: db.execute(q("schedules_of"), (arg,)).fetchall())
        schedules = [convert.schedule(r) for r in rows]
        return {s.current_seq: s for s in schedules if s.current_seq is not None}

    async def advance_schedules(self, advances: Sequence[Advance]) -> list[int | None]:
        return await self._writer.transaction(
            planned(plans.advance_schedules, advances), acknowledged=False
        )

    async def set_schedule_status(
        self, schedule_id: str, status: str, *, only_from: Collection[str] | None = None
    ) -> ScheduleRecord | None:
        only = as_json(list(only_from)) if only_from is not None else None
        params = {"status": status, "schedule_id": schedule_id, "only_from": only}

        def work(db: sqlite3.Connection) -> ScheduleRecord | None:
            if not db.execute(q("set_schedule_status"), params).rowcount:
                return None
            row = db.execute(q("get_schedule"), (schedule_id,)).fetchone()
            return convert.schedule(row)

        return await self._writer.transaction(work)

    async def list_schedules(
        self, *, statuses: Collection[str], before: Page | None, limit: int
    ) -> list[ScheduleSummary]:
        params = {**below(before), "statuses": as_json(sorted(statuses)), "limit": limit}
        rows = await self._reader.run(lambda db: db.execute(q("list_schedules"), params).fetchall())
        return [convert.schedule_summary(r) for r in rows]
