"""The named queries of `queries.sql`."""

from __future__ import annotations

from functools import cache
from typing import Any

import msgspec

from tickwheel.storage.named_queries import SCHEDULE_COLUMNS, TASK_COLUMNS, load

__all__ = ["SCHEDULE_COLUMNS", "TASK_COLUMNS", "as_json", "q"]


@cache
def queries() -> dict[str, str]:
    return load(__package__ or "tickwheel.storage.sqlite")


def q(name: str) -> str:
    return queries()[name]


# The database's clock, in ms since the epoch.
DB_NOW_MS = "CAST((julianday('now') - 2440587.5) * 86400000 AS INTEGER)"
NEVER = 2**62  # beyond any time or id: an open bound


_JSON = msgspec.json.Encoder()


def as_json(value: Any) -> str:
    """A batch bound as one JSON text, which a statement reads with `json_each`.
    msgspec takes a tenth of `json.dumps`'s time, and much of it is spent on the
    writer's thread, where every moment holds up every other write."""
    return _JSON.encode(value).decode()
