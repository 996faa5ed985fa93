"""Fixtures every folder of the suite may use: servers of the tests' own, for tests that
stop, restart or empty one. Each starts the first time a test asks for it."""

from __future__ import annotations

from collections.abc import Iterator
from typing import TypeVar

import pytest
from servers import PrivatePostgres, PrivateRedis, PrivateServer, ServerMissing
from services import missing

S = TypeVar("S", bound=PrivateServer)


def _started(kind: type[S]) -> Iterator[S]:
    try:
        server = kind()
    except ServerMissing as error:
        missing(str(error))
    with server:
        yield server


@pytest.fixture(scope="session")
def private_redis() -> Iterator[PrivateRedis]:
    """A `redis-server` of the session's own, on a free port, without persistence."""
    yield from _started(PrivateRedis)


@pytest.fixture(scope="session")
def private_postgres() -> Iterator[PrivatePostgres]:
    """A PostgreSQL cluster of the session's own, on a free port, in a temporary folder."""
    yield from _started(PrivatePostgres)
