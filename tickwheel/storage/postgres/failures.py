"""What a failure of PostgreSQL means to the caller, decided in one place.

A connection-level failure (the server restarting or refusing connections, a backend
terminated, a socket reset, a statement that timed out, a pooled connection left in a
state asyncpg cannot use) means the store is unavailable, not that the request was
wrong. What it did depends on where the work stood:

- before COMMIT was sent (connecting, BEGIN, the statements of a transaction), nothing
  was stored: the server rolls back a transaction whose connection is gone, so the
  work may run again on a fresh connection;
- during COMMIT, the change may or may not have been made: the outcome is unknown;
- so too during a statement that commits by itself (work run without BEGIN), unless
  the failure surely came before the statement reached the server.

Any other error (a constraint, a deadlock, a bug) is the caller's to handle.
"""

from __future__ import annotations

from enum import Enum

import asyncpg
from asyncpg import exceptions as pg

from tickwheel.errors import OutcomeUnknown, StorageFull, StoreUnavailable


class Phase(Enum):
    CONNECT = "connect"  # taking a connection from the pool (maybe making one)
    WORK = "work"  # BEGIN and the statements of a transaction, or one statement alone
    COMMIT = "commit"  # COMMIT sent


# Failures raised by the client before the statement left it: the work did nothing.
_NOT_SENT: tuple[type[BaseException], ...] = (
    ConnectionRefusedError,
    asyncpg.InterfaceError,  # "connection is closed", "another operation is in progress"
    pg.InternalClientError,  # "cannot switch to state ...": a connection left half way
    pg.ClientCannotConnectError,
    pg.ConnectionRejectionError,
)
# Failures after which what the server did with a statement is not known for sure: a
# backend terminated (a restart, pg_terminate_backend) aborts what it runs, but it may
# have committed just before it noticed.
_LOST: tuple[type[BaseException], ...] = (
    OSError,  # a reset or broken socket; TimeoutError (a command timeout) is one too
    pg.PostgresConnectionError,  # ConnectionDoesNotExistError: closed mid-operation
    pg.CannotConnectNowError,  # the database is starting up or shutting down
    pg.AdminShutdownError,
    pg.CrashShutdownError,
    pg.TooManyConnectionsError,
)


def connection_failed(error: BaseException) -> bool:
    """Whether `error` says the connection, not the work, failed."""
    return isinstance(error, _NOT_SENT + _LOST)


def classify(error: BaseException, phase: Phase, *, atomic: bool) -> StoreUnavailable | None:
    """The store error `error` stands for, or None when it is not the store's failing.
    A plain `StoreUnavailable` means nothing was changed (the work may run again)."""
    if isinstance(error, pg.DiskFullError):  # the statement failed whole: nothing stored
        return StorageFull(f"the PostgreSQL store's disk is full: {error}")
    if not connection_failed(error):
        return None
    # A connection in a state the client cannot name during COMMIT may have sent it.
    sent = not isinstance(error, _NOT_SENT)
    if phase is Phase.COMMIT or (phase is Phase.WORK and not atomic and sent):
        return OutcomeUnknown(
            f"the PostgreSQL store failed while committing, so the change may or may not"
            f" have been made: {_describe(error)}"
        )
    return StoreUnavailable(f"the PostgreSQL store cannot answer: {_describe(error)}")


def _describe(error: BaseException) -> str:
    return str(error) or type(error).__name__
