"""The named queries of `queries.sql`."""

from __future__ import annotations

from functools import cache

from tickwheel.storage.named_queries import SCHEDULE_COLUMNS, TASK_COLUMNS, load

__all__ = ["SCHEDULE_COLUMNS", "TASK_COLUMNS", "q"]


@cache
def queries() -> dict[str, str]:
    return load(__package__ or "tickwheel.storage.sqlite")


def q(name: str) -> str:
    return queries()[name]


# The database's clock, in ms since the epoch.
DB_NOW_MS = "CAST((julianday('now') - 2440587.5) * 86400000 AS INTEGER)"
NEVER = 2**62  # beyond any time or id: an open bound
