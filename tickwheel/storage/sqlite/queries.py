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
