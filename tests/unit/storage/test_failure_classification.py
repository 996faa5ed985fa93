"""What a store's failure means: PostgreSQL's errors classified by where the work
stood, SQLite's disk full named, and failures tallied for the log."""

from __future__ import annotations

import sqlite3

import asyncpg
import pytest
from asyncpg import exceptions as pg

from tickwheel.errors import OutcomeUnknown, StorageFull, StoreUnavailable
from tickwheel.storage.postgres.failures import Phase, classify
from tickwheel.storage.sqlite.session import unavailable

CONNECTION_ERRORS = [
    pg.ConnectionDoesNotExistError("connection was closed in the middle of operation"),
    pg.CannotConnectNowError("the database system is shutting down"),
    pg.AdminShutdownError("terminating connection due to administrator command"),
    pg.TooManyConnectionsError("sorry, too many clients already"),
    pg.InternalClientError("cannot switch to state 15; another operation is in progress"),
    asyncpg.InterfaceError("cannot perform operation: another operation is in progress"),
    ConnectionRefusedError(111, "Connection refused"),
    ConnectionResetError(104, "Connection reset by peer"),
    TimeoutError(),
]


@pytest.mark.parametrize("error", CONNECTION_ERRORS, ids=lambda e: type(e).__name__)
def test_a_connection_failure_before_commit_changed_nothing(error: Exception) -> None:
    for phase in (Phase.CONNECT, Phase.WORK):
        failure = classify(error, phase, atomic=True)
        assert type(failure) is StoreUnavailable
        assert failure.code == "store_unavailable"
    assert type(classify(error, Phase.CONNECT, atomic=False)) is StoreUnavailable


@pytest.mark.parametrize("error", CONNECTION_ERRORS, ids=lambda e: type(e).__name__)
def test_a_connection_failure_during_commit_leaves_the_outcome_unknown(error: Exception) -> None:
    assert type(classify(error, Phase.COMMIT, atomic=True)) is OutcomeUnknown
    # A statement without BEGIN commits by itself, unless it surely never left.
    client_side = isinstance(error, asyncpg.InterfaceError | pg.InternalClientError)
    refused = isinstance(error, ConnectionRefusedError)
    expected = StoreUnavailable if client_side or refused else OutcomeUnknown
    assert type(classify(error, Phase.WORK, atomic=False)) is expected


def test_errors_of_the_work_itself_are_not_the_stores() -> None:
    for error in (pg.UniqueViolationError("dup"), pg.DeadlockDetectedError("x"), KeyError("k")):
        assert classify(error, Phase.WORK, atomic=True) is None
    full = classify(pg.DiskFullError("could not extend file"), Phase.WORK, atomic=True)
    assert isinstance(full, StorageFull) and full.code == "storage_full"


def test_sqlite_names_a_full_disk() -> None:
    error = sqlite3.OperationalError("database or disk is full")
    error.sqlite_errorcode = sqlite3.SQLITE_FULL  # type: ignore[attr-defined]
    assert type(unavailable(error)) is StorageFull
    locked = sqlite3.OperationalError("database is locked")
    locked.sqlite_errorcode = sqlite3.SQLITE_BUSY  # type: ignore[attr-defined]
    assert type(unavailable(locked)) is StoreUnavailable
