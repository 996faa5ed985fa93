"""The PostgreSQL store's dispatch roles: pending tasks for the loaders, with news by
LISTEN/NOTIFY, and attempts (claims, leases, ends)."""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable, Collection, Mapping, Sequence
from dataclasses import replace
from typing import Any

import asyncpg

from tickwheel.models import Finish, TaskRecord, WheelEntry
from tickwheel.storage import rows as convert
from tickwheel.storage.base import News
from tickwheel.storage.claiming import UnboundedClaim
from tickwheel.storage.plans import attempts, limits, propagation
from tickwheel.storage.plans.steps import Claim, Skipped
from tickwheel.storage.postgres.base import NEVER, PostgresBase
from tickwheel.storage.postgres.steps import PostgresSteps, columns, run
from tickwheel.storage.records import Claimed

log = logging.getLogger(__name__)


class PostgresDispatch(PostgresBase, UnboundedClaim):
    async def load_pending(
        self,
        partitions: Collection[int],
        *,
        due_after: int | None,
        due_until: int,
        mark_after: int | None = None,
    ) -> list[WheelEntry]:
        parts = sorted(partitions)
        if mark_after is None:
            after = -NEVER if due_after is None else due_after
            found = await self._fetch("load_due_range", parts, after, due_until)
        else:
            found = await self._fetch("load_new", parts, mark_after, due_until)
        return [convert.wheel_entry(r) for r in found]

    async def overdue(
        self, partitions: Collection[int], *, due_before: int, limit: int
    ) -> list[WheelEntry]:
        found = await self._fetch("overdue", sorted(partitions), due_before, limit)
        return [convert.wheel_entry(r) for r in found]

    async def max_seq(self) -> int:
        return int(await self._fetchval("max_seq"))

    async def max_mark(self) -> int:
        return int(await self._fetchval("max_mark"))

    async def subscribe(self, on_news: Callable[[News], None]) -> None:
        self._on_news = on_news
        await self._listen()

    async def _listen(self) -> None:
        """A connection of its own that LISTENs; when it drops (a restart), another is
        made, retrying every second, and meanwhile the engine's own polling covers."""

        def deliver(_: object, __: int, channel: str, ___: object) -> None:
            self._on_news(News(channel))

        self._listener = await asyncpg.connect(self.url, server_settings=self._settings())
        for news in News:
            await self._listener.add_listener(news.value, deliver)
        self._listener.add_termination_listener(lambda _: self._relisten())

    def _relisten(self) -> None:
        if self._closing or self._relistening is not None:
            return

        async def again() -> None:
            while not self._closing:
                try:
                    await self._listen()
                    log.info("listening for news again")
                    break
                except (OSError, asyncpg.PostgresError, asyncpg.InterfaceError):
                    await asyncio.sleep(1.0)
            self._relistening = None

        self._relistening = asyncio.get_running_loop().create_task(again())

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
        # One statement, in a round trip of its own: the tasks no key or limit holds.
        found: list[Any] = await self._transaction(
            lambda db: PostgresSteps(db).claim(plain), atomic=False
        )
        deferred: list[int] = []
        limited: frozenset[int] = frozenset()
        if len(found) < len(items):  # cancelled meanwhile, behind a key, or limited
            rest = replace(plain, items=propagation.unclaimed(items, found), skip=Skipped())
            if skip:
                taken = await self._transaction(
                    lambda db: run(db, limits.claim_limited(rest, start_now))
                )
                found += taken.rows
                deferred = taken.deferred
                limited = frozenset(r["seq"] for r in taken.rows)
            else:
                found += await self._transaction(lambda db: run(db, propagation.claim_keyed(rest)))
        return Claimed([convert.claimed(r) for r in found], deferred, limited)

    async def extend_leases(self, fences: Mapping[int, int], *, until_ms: int) -> set[int]:
        seqs = sorted(fences)  # locked in seq order, as ends are (`attempts.Ends`)
        found = await self._fetch("extend_leases", seqs, [fences[s] for s in seqs], until_ms)
        return set(fences) - {r[0] for r in found}

    async def finish(self, finishes: Sequence[Finish]) -> list[bool]:
        ends = attempts.Ends(finishes)
        if ends.retries or ends.repeats:  # new marks: they must commit with the ends
            return await self._transaction(lambda db: run(db, attempts.finish(finishes)))
        # Every attempt ended for good: the ends and their execution rows in one statement.
        outcomes = [str(f.outcome) for f in ends.first.values()]
        written = await self._fetch("end_attempts", *columns(ends.rows(()), 8), outcomes)
        return ends.answers({r[0] for r in written}, [])

    async def expired_leases(
        self, partitions: Collection[int], *, now_ms: int, limit: int
    ) -> list[TaskRecord]:
        found = await self._fetch("expired_leases", sorted(partitions), now_ms, limit)
        return [convert.task(r) for r in found]

    async def expire_unstarted(
        self, partitions: Collection[int], *, now_ms: int, limit: int
    ) -> list[TaskRecord]:
        found = await self._fetch("expire_unstarted", sorted(partitions), now_ms, limit)
        return [convert.task(r) for r in found]
