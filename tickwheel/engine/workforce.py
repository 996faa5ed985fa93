"""What the live workers handle: which queues they pull and which task types they run.

A submission asks whether a task type is registered with some live worker (to warn, or
with `strict_task_types` to refuse), and a task's page whether any live worker takes
its queue and type. Both read the workers' reports (`WorkerStore.live_workers`) at most
once a second, one read shared by every caller meanwhile: on the submission path this
costs a set lookup per batch, never a read per task.

This node's own worker counts from the start, before its first report lands (a fresh
`tickwheel up` knows its App's types), and the built-in types are never warned of.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Collection
from typing import NamedTuple

from tickwheel.clock import Clock
from tickwheel.outage import log_failure
from tickwheel.storage.base import WorkerStore

log = logging.getLogger(__name__)

MAX_AGE_SECONDS = 1.0


class Handles(NamedTuple):
    """What one worker takes: tasks of its queues, of its task types (None: any)."""

    queues: frozenset[str]
    task_types: frozenset[str] | None

    def takes(self, queue: str, task_type: str) -> bool:
        return queue in self.queues and (self.task_types is None or task_type in self.task_types)

    def runs(self, task_type: str) -> bool:
        return self.task_types is None or task_type in self.task_types


class Workforce:
    def __init__(
        self,
        *,
        store: WorkerStore,
        clock: Clock,
        own: Handles | None = None,
        built_in: Collection[str] = (),
        max_age_seconds: float = MAX_AGE_SECONDS,
    ) -> None:
        """`own`: what this node's worker takes, if it runs one; `built_in`: the task
        types every in-process worker runs, never warned of at submission."""
        self._store = store
        self._clock = clock
        self._own = own
        self._built_in = frozenset(built_in)
        self._max_age_ms = round(max_age_seconds * 1000)
        self._workers: list[Handles] | None = None  # None: never read
        self._read_ms: int | None = None
        self._reading: asyncio.Future[list[Handles] | None] | None = None

    async def unregistered(self, task_types: Collection[str]) -> set[str]:
        """Those of `task_types` that no live worker has registered, built-ins aside.
        None are while the workers cannot be read: a submission is not refused, nor
        warned of, for what cannot be told."""
        wanted = set(task_types) - self._built_in
        if not wanted:
            return set()
        workers = await self.live()
        if workers is None:
            return set()
        return {t for t in wanted if not any(w.runs(t) for w in workers)}

    async def takes(self, queue: str, task_type: str) -> bool | None:
        """Whether a live worker takes tasks of this type from this queue (None: the
        workers cannot be read now)."""
        workers = await self.live()
        return None if workers is None else any(w.takes(queue, task_type) for w in workers)

    async def live(self) -> list[Handles] | None:
        """What the live workers take, this node's own included, at most a second old."""
        now = self._clock.now_ms()
        if self._read_ms is None or now - self._read_ms >= self._max_age_ms:
            if self._reading is None:
                self._reading = asyncio.ensure_future(self._read(now))
            reading = self._reading
            await asyncio.shield(reading)
        return self._workers

    async def _read(self, now_ms: int) -> list[Handles] | None:
        try:
            records = await self._store.live_workers()
        except Exception as error:  # keep what was read before, and try again next time
            log_failure(log, error, "reading the live workers failed")
        else:
            found = [
                Handles(
                    frozenset(r.queues), None if r.task_types is None else frozenset(r.task_types)
                )
                for r in records
            ]
            self._workers = [*found, self._own] if self._own is not None else found
        finally:
            self._read_ms = now_ms
            self._reading = None
        return self._workers
