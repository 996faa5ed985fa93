"""Keeps PostgreSQL's planner statistics of `tasks` current after bulk inserts.

Autovacuum analyzes a table only after its naptime (a minute by default). Until then
the planner still believes the last statistics: right after a burst of inserts into a
table it last saw with few pending tasks, it estimates that "status = 'pending'" picks
a handful of rows and plans claims and completions as a scan of every pending task per
batch (seconds per claim at 100,000 pending, measured with `tickwheel bench burst
--mode distributed`). So the store counts the rows it inserts and analyzes `tasks`
itself after the `first` rows a process inserts, then whenever they reach a tenth of the
table (at least `minimum`): an ANALYZE samples a bounded number of rows, and it
invalidates the cached plans of every connection, which are then made again for the
table's size. A plan cached while the table was empty (a scan of every row looks
cheapest) is thus made again after the first thousand tasks. It reads a small sample
(a tenth of the default's: 30-40 ms at 300,000 tasks against 350-400 ms), enough for
the plans at stake. Where autovacuum runs, it refines the ranges' statistics later
from its own sample; it never analyzes the partitioned table as a whole, whose
statistics come from these alone.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable

log = logging.getLogger(__name__)

Analyze = Callable[[], Awaitable[int]]  # runs ANALYZE; returns the rows it estimates


class InsertStatistics:
    def __init__(
        self, analyze: Analyze, *, first: int = 1_000, minimum: int = 10_000, share: float = 0.1
    ) -> None:
        self._analyze = analyze
        self._minimum = minimum
        self._share = share
        self._threshold = first
        self._inserted = 0
        self._running: asyncio.Task[None] | None = None

    def inserted(self, rows: int) -> None:
        """`rows` were committed: analyze in the background once enough have been."""
        self._inserted += rows
        if self._inserted >= self._threshold and self._running is None:
            self._inserted = 0
            self._running = asyncio.create_task(self._run())

    async def _run(self) -> None:
        try:
            rows = await self._analyze()
            self._threshold = max(self._minimum, round(rows * self._share))
        except Exception:  # a hint to the planner: the next batch tries again
            log.warning("analyzing the tasks table failed", exc_info=True)
        finally:
            self._running = None

    async def close(self) -> None:
        if self._running is not None:
            self._running.cancel()
            await asyncio.gather(self._running, return_exceptions=True)
