"""The SQLite store's cluster roles: partition leases (and the file's lock, which frees
a dead holder's at once), the cluster as operators see it, workers alive and API
tokens."""

from __future__ import annotations

import logging
import sqlite3
from collections.abc import Collection, Mapping

from tickwheel.storage import rows as convert
from tickwheel.storage.base import (
    LeaseHolder,
    Renewal,
    SchedulerNode,
    TokenRecord,
    WorkerBeat,
    WorkerRecord,
)
from tickwheel.storage.sqlite.base import SqliteBase, read_now
from tickwheel.storage.sqlite.queries import DB_NOW_MS, as_json, q

log = logging.getLogger(__name__)


class SqliteCluster(SqliteBase):
    async def release(self, node_id: str, held: Mapping[int, int]) -> None:
        rows = [(p, node_id, epoch) for p, epoch in held.items()]
        await self._writer.transaction(
            lambda db: db.executemany(q("release_lease"), rows), acknowledged=False
        )

    async def renew(
        self,
        node_id: str,
        marks: Mapping[int, tuple[int, int]],
        wanted: Collection[int],
        *,
        ttl_ms: int,
        beat: bool,
    ) -> Renewal:
        """Several statements (watermarks, releases, leases, the heartbeat) in one
        transaction: the file is on this host, so their count costs little."""
        want = set(wanted)

        def work(db: sqlite3.Connection) -> Renewal:
            now = db.execute(f"SELECT {DB_NOW_MS}").fetchone()[0]
            params = {"node": node_id, "now": now, "ttl": ttl_ms}
            for partition, (epoch, mark) in marks.items():
                fence = {**params, "partition": partition, "epoch": epoch, "watermark": mark}
                db.execute(q("set_watermark"), fence)
            gone = [(p, node_id, epoch) for p, (epoch, _) in marks.items() if p not in want]
            db.executemany(q("release_lease"), gone)
            taken = {**params, "wanted": as_json(sorted(want))}
            held = dict(db.execute(q("acquire_leases"), taken).fetchall())
            if not beat:
                return Renewal(held, [])
            db.execute(q("node_heartbeat"), params)
            db.execute(q("forget_dead_nodes"), params)
            return Renewal(held, [r[0] for r in db.execute(q("live_nodes"), params)])

        return await self._writer.transaction(work, acknowledged=False)

    async def hold_lock(self, node_id: str) -> bool:
        if self._holder.held or self.path == ":memory:":
            return True
        try:
            previous = self._holder.take(node_id)
        except BlockingIOError:
            if not self._told_held:
                self._told_held = True
                log.warning(
                    "another Tickwheel process (pid and node: %s) is running on %s: it holds"
                    " the partitions; this one takes them when it stops or dies",
                    self._holder.holder(),
                    self.path,
                )
            return False
        if previous:
            freed = await self._writer.transaction(
                lambda db: db.execute(q("release_dead_holder"), (previous,)).rowcount,
                acknowledged=False,
            )
            if freed:
                log.warning(
                    "the process that held %s before (node %s) is gone: its %d partitions"
                    " are taken at once",
                    self.path,
                    previous,
                    freed,
                )
        return True

    async def leave(self, node_id: str) -> None:
        await self._writer.transaction(
            lambda db: db.execute(q("leave"), (node_id,)), acknowledged=False
        )

    async def watermarks(self) -> dict[int, int]:
        return dict(await self._reader.run(lambda db: db.execute(q("watermarks")).fetchall()))

    async def scheduler_nodes(self) -> list[SchedulerNode]:
        rows = await self._reader.run(lambda db: read_now(db, "scheduler_nodes"))
        return [SchedulerNode(*r) for r in rows]

    async def lease_holders(self) -> list[LeaseHolder]:
        rows = await self._reader.run(lambda db: read_now(db, "lease_holders"))
        return [LeaseHolder(*r) for r in rows]

    async def worker_seen(self, beat: WorkerBeat, *, ttl_ms: int) -> None:
        def work(db: sqlite3.Connection) -> None:
            params = {
                "worker_id": beat.worker_id,
                "kind": beat.kind,
                "queues": _json_list(beat.queues),
                "task_types": _json_list(beat.task_types),
                "concurrency": beat.concurrency,
                "now": db.execute(f"SELECT {DB_NOW_MS}").fetchone()[0],
                "ttl": ttl_ms,
            }
            db.execute(q("worker_seen"), params)
            db.execute(q("forget_dead_workers"), params)

        await self._writer.transaction(work, acknowledged=False)

    async def worker_left(self, worker_id: str) -> None:
        await self._writer.transaction(
            lambda db: db.execute(q("worker_left"), (worker_id,)), acknowledged=False
        )

    async def live_workers(self) -> list[WorkerRecord]:
        rows = await self._reader.run(lambda db: read_now(db, "live_workers"))
        return [convert.worker(r) for r in rows]

    async def create_token(
        self, token_id: str, token_hash: str, *, name: str, scopes: frozenset[str], now_ms: int
    ) -> None:
        row = (token_id, token_hash, name, ",".join(sorted(scopes)), now_ms)
        await self._writer.transaction(lambda db: db.execute(q("create_token"), row))

    async def list_tokens(self) -> list[TokenRecord]:
        rows = await self._reader.run(lambda db: db.execute(q("list_tokens")).fetchall())
        return [TokenRecord(r[0], r[1], frozenset(r[2].split(",")), r[3], r[4]) for r in rows]

    async def revoke_token(self, token_id: str, now_ms: int) -> bool:
        params = {"token_id": token_id, "now": now_ms}
        count = await self._writer.transaction(
            lambda db: db.execute(q("revoke_token"), params).rowcount
        )
        return bool(count)

    async def active_tokens(self) -> dict[str, frozenset[str]]:
        rows = await self._reader.run(lambda db: db.execute(q("active_tokens")).fetchall())
        return {r[0]: frozenset(r[1].split(",")) for r in rows}


def _json_list(names: tuple[str, ...] | None) -> str | None:
    return None if names is None else as_json(list(names))
