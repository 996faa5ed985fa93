"""Procrastinate through both workloads, in a database of this test's own on the
session's private PostgreSQL (so that dropping it can never drop another user's)."""

from __future__ import annotations

from collections.abc import AsyncIterator

import psycopg
import pytest
from peer_workloads import check_workloads
from psycopg import sql
from psycopg.conninfo import make_conninfo
from servers import PrivatePostgres

from bench.peers.procrastinate_tasks import DATABASE_URL_ENV

DATABASE = "tickwheel_bench_test"


@pytest.fixture
async def own_database(
    monkeypatch: pytest.MonkeyPatch, private_postgres: PrivatePostgres
) -> AsyncIterator[None]:
    """The peer creates the database; it is dropped afterwards."""
    url = private_postgres.url
    monkeypatch.setenv(DATABASE_URL_ENV, make_conninfo(url, dbname=DATABASE))
    yield
    async with await psycopg.AsyncConnection.connect(url, autocommit=True) as db:
        drop = sql.SQL("DROP DATABASE IF EXISTS {} WITH (FORCE)")
        await db.execute(drop.format(sql.Identifier(DATABASE)))


@pytest.mark.usefixtures("own_database")
async def test_procrastinate_runs_every_task_once() -> None:
    await check_workloads("procrastinate")
