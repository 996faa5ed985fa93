"""The distributed store: PostgreSQL through an asyncpg pool.

The same contract as the SQLite store (tests/contract), with what many writers need:
batches bound as arrays (one statement, one round trip), every read-then-write that
must not race taken with a row lock or a per-key advisory lock, the counter of marks
locked to commit so that marks follow commit order, and lease expiry by the server's
clock.
"""

from __future__ import annotations

from tickwheel.storage.postgres.cluster import PostgresCluster
from tickwheel.storage.postgres.dispatch import PostgresDispatch
from tickwheel.storage.postgres.limits import PostgresLimits
from tickwheel.storage.postgres.schedules import PostgresSchedules
from tickwheel.storage.postgres.tasks import PostgresTasks


class PostgresStore(
    PostgresTasks, PostgresDispatch, PostgresSchedules, PostgresCluster, PostgresLimits
):
    """Every role of `storage.base.Store` on one pool (see `base.PostgresBase`)."""
