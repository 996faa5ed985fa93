"""The embedded store: one SQLite file in WAL mode.

Writes go through one connection (SQLite has one writer at a time), reads through
another so that API reads never wait behind a write batch.
"""

from __future__ import annotations

from tickwheel.storage.sqlite.cluster import SqliteCluster
from tickwheel.storage.sqlite.dispatch import SqliteDispatch
from tickwheel.storage.sqlite.limits import SqliteLimits
from tickwheel.storage.sqlite.schedules import SqliteSchedules
from tickwheel.storage.sqlite.tasks import SqliteTasks


class SqliteStore(SqliteTasks, SqliteDispatch, SqliteSchedules, SqliteCluster, SqliteLimits):
    """Every role of `storage.base.Store` on one file (see `base.SqliteBase`)."""
