"""Workers say they are alive, for operators to see, at a cost of nothing per task.

The in-process worker reports on a timer (`Worker`); a worker over HTTP is seen when it
claims or heartbeats, and `Sightings` writes that at most once per interval per worker
id, so a busy worker costs one small upsert every few seconds. The store's clock
judges expiry.
"""

from __future__ import annotations

import logging
from collections.abc import Collection

from tickwheel.clock import Clock
from tickwheel.outage import log_failure
from tickwheel.storage.base import WorkerBeat, WorkerStore

log = logging.getLogger(__name__)

# A worker over HTTP long-polls a claim for up to 30 s, then claims again.
HTTP_TTL_SECONDS = 60.0
INTERVAL_SECONDS = 5.0
MAX_TRACKED = 10_000

# What a worker over HTTP said it handles: its queues, and its task types (None: any).
Handles = tuple[tuple[str, ...], tuple[str, ...] | None]


class Sightings:
    def __init__(
        self,
        *,
        store: WorkerStore,
        clock: Clock,
        interval_seconds: float = INTERVAL_SECONDS,
        ttl_seconds: float = HTTP_TTL_SECONDS,
    ) -> None:
        self._store = store
        self._clock = clock
        self._interval_ms = round(interval_seconds * 1000)
        self._ttl_ms = round(ttl_seconds * 1000)
        # worker id -> (when last written, by this node's clock; what it said it handles)
        self._written: dict[str, tuple[int, Handles | None]] = {}

    async def seen(
        self,
        worker_id: str,
        queues: Collection[str] | None = None,
        task_types: Collection[str] | None = None,
    ) -> None:
        """A worker over HTTP claimed (with its `queues`, and the `task_types` it asked
        for, None: any) or heartbeated (no queues). Written when its last write here is
        an interval old or what it handles changed; a failure is logged, never raised:
        the worker's own call matters more."""
        now = self._clock.now_ms()
        said = None
        if queues is not None:
            said = (tuple(queues), None if task_types is None else tuple(sorted(task_types)))
        last = self._written.get(worker_id)
        if last is not None and now - last[0] < self._interval_ms and said in (None, last[1]):
            return
        self._remember(worker_id, now, said if said is not None or last is None else last[1])
        try:
            queues_said, types_said = said or (None, None)
            beat = WorkerBeat(worker_id, "http", queues_said, None, types_said)
            await self._store.worker_seen(beat, ttl_ms=self._ttl_ms)
        except Exception as error:
            log_failure(log, error, "recording that worker %s is alive failed", worker_id)

    def _remember(self, worker_id: str, now: int, queues: Handles | None) -> None:
        if len(self._written) >= MAX_TRACKED:  # many ids: forget those written long ago
            old = now - self._interval_ms
            self._written = {k: v for k, v in self._written.items() if v[0] >= old}
            if len(self._written) >= MAX_TRACKED:
                self._written.clear()
        self._written[worker_id] = (now, queues)
