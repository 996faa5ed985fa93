"""The PostgreSQL store's cluster roles: partition leases (renewed on a connection of
their own), the cluster as operators see it, workers alive and API tokens."""

from __future__ import annotations

import json
from collections.abc import Awaitable, Collection, Mapping
from typing import Any

import asyncpg

from tickwheel.errors import StoreUnavailable
from tickwheel.storage import rows as convert
from tickwheel.storage.base import (
    LeaseHolder,
    News,
    Renewal,
    SchedulerNode,
    TokenRecord,
    WorkerBeat,
    WorkerRecord,
)
from tickwheel.storage.postgres.base import COMMAND_TIMEOUT_SECONDS, PostgresBase
from tickwheel.storage.postgres.steps import Db, changed, q


async def _changed_async(command: Awaitable[str]) -> bool:
    return changed(await command)


class PostgresCluster(PostgresBase):
    async def release(self, node_id: str, held: Mapping[int, int]) -> None:
        async def work(db: Db) -> None:
            await db.execute(q("release_leases"), node_id, list(held), list(held.values()))
            await db.execute(q("notify"), News.PARTITIONS.value)  # take them at once

        await self._transaction(work)

    async def renew(
        self,
        node_id: str,
        marks: Mapping[int, tuple[int, int]],
        wanted: Collection[int],
        *,
        ttl_ms: int,
        beat: bool,
    ) -> Renewal:
        want = set(wanted)
        parts = sorted(want | set(marks))
        args = (
            node_id,
            ttl_ms,
            parts,
            [marks[p][0] if p in marks else None for p in parts],
            [marks[p][1] if p in marks else None for p in parts],
            [p in want for p in parts],
            beat,
            News.PARTITIONS.value,
        )
        row = await self._lease_fetchrow("renew_leases", *args)
        held = dict(zip(row["partitions"], row["epochs"], strict=True))
        return Renewal(held, sorted([*row["others"], node_id]) if beat else [])

    async def _lease_fetchrow(self, name: str, *args: Any) -> asyncpg.Record:
        """Run one statement on the lease renewals' own connection, opened on first use
        and again after any failure or cancellation (its state is unknown then)."""
        try:
            if self._lease_db is None:
                settings = {"search_path": self._schema} if self._schema else {}
                self._lease_db = await asyncpg.connect(
                    self.url, server_settings=settings, command_timeout=COMMAND_TIMEOUT_SECONDS
                )
            row = await self._lease_db.fetchrow(q(name), *args)
            assert row is not None
            return row
        except BaseException as error:
            if self._lease_db is not None:
                self._lease_db.terminate()
                self._lease_db = None
            if isinstance(
                error, OSError | asyncpg.PostgresConnectionError | asyncpg.InterfaceError
            ):
                raise StoreUnavailable(f"the PostgreSQL store cannot answer: {error}") from error
            raise

    async def leave(self, node_id: str) -> None:
        await self._transaction(lambda db: db.execute(q("leave"), node_id))

    async def watermarks(self) -> dict[int, int]:
        return {r[0]: r[1] for r in await self._fetch("watermarks")}

    async def scheduler_nodes(self) -> list[SchedulerNode]:
        return [SchedulerNode(*r) for r in await self._fetch("scheduler_nodes")]

    async def lease_holders(self) -> list[LeaseHolder]:
        return [LeaseHolder(*r) for r in await self._fetch("lease_holders")]

    async def worker_seen(self, beat: WorkerBeat, *, ttl_ms: int) -> None:
        queues = None if beat.queues is None else json.dumps(list(beat.queues))
        types = None if beat.task_types is None else json.dumps(list(beat.task_types))

        async def work(db: Db) -> None:
            args = (beat.worker_id, beat.kind, queues, beat.concurrency, ttl_ms, types)
            await db.execute(q("worker_seen"), *args)
            await db.execute(q("forget_dead_workers"))

        await self._transaction(work)

    async def worker_left(self, worker_id: str) -> None:
        await self._transaction(lambda db: db.execute(q("worker_left"), worker_id))

    async def live_workers(self) -> list[WorkerRecord]:
        return [convert.worker(r) for r in await self._fetch("live_workers")]

    async def create_token(
        self, token_id: str, token_hash: str, *, name: str, scopes: frozenset[str], now_ms: int
    ) -> None:
        row = (token_id, token_hash, name, ",".join(sorted(scopes)), now_ms)
        await self._transaction(lambda db: db.execute(q("create_token"), *row))

    async def list_tokens(self) -> list[TokenRecord]:
        found = await self._fetch("list_tokens")
        return [TokenRecord(r[0], r[1], frozenset(r[2].split(",")), r[3], r[4]) for r in found]

    async def revoke_token(self, token_id: str, now_ms: int) -> bool:
        return await self._transaction(
            lambda db: _changed_async(db.execute(q("revoke_token"), token_id, now_ms))
        )

    async def active_tokens(self) -> dict[str, frozenset[str]]:
        return {r[0]: frozenset(r[1].split(",")) for r in await self._fetch("active_tokens")}
