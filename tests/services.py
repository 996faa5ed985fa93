"""Where the tests find PostgreSQL and Redis, and what happens when they are missing.

Set TICKWHEEL_TEST_DATABASE_URL and TICKWHEEL_TEST_REDIS_URL to point the tests
elsewhere. A missing server skips its tests with a loud reason; with
TICKWHEEL_REQUIRE_SERVICES=1 (as CI sets it) the skip is a failure instead.
"""

from __future__ import annotations

import os
import socket
import uuid
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import NoReturn
from urllib.parse import urlsplit

import asyncpg
import pytest

POSTGRES_URL = os.environ.get(
    "TICKWHEEL_TEST_DATABASE_URL", "postgresql://postgres@127.0.0.1:5432/postgres"
)
REDIS_URL = os.environ.get("TICKWHEEL_TEST_REDIS_URL", "redis://127.0.0.1:6379/15")


def _reachable(url: str, default_port: int) -> bool:
    parts = urlsplit(url)
    try:
        with socket.create_connection(
            (parts.hostname or "127.0.0.1", parts.port or default_port), 2
        ):
            return True
    except OSError:
        return False


def require(service: str) -> str:
    """The URL of `service` ("postgres" or "redis"), or skip (fail, in CI) the test."""
    url, port = (POSTGRES_URL, 5432) if service == "postgres" else (REDIS_URL, 6379)
    if _reachable(url, port):
        return url
    missing(f"{service} is not reachable at {url}")


def missing(what: str) -> NoReturn:
    """Skips the test loudly (fails it, in CI) for want of `what`."""
    reason = f"!!! {what}: its tests did NOT run !!!"
    if os.environ.get("TICKWHEEL_REQUIRE_SERVICES") == "1":
        pytest.fail(reason)
    pytest.skip(reason)


CHROMIUM = os.environ.get("TICKWHEEL_TEST_CHROMIUM", "/usr/bin/chromium")


def chromium() -> str:
    """Debian's Chromium for the browser tests (`make test` installs it), or skip (fail,
    in CI) the test."""
    if os.access(CHROMIUM, os.X_OK):
        return CHROMIUM
    missing(f"no Chromium at {CHROMIUM}")


@asynccontextmanager
async def fresh_schema() -> AsyncIterator[str]:
    """The URL of a fresh PostgreSQL schema, dropped afterwards; asyncpg passes the URL's
    other parameters as server settings."""
    url = require("postgres")
    schema = f"tw_node_{uuid.uuid4().hex[:12]}"
    db = await asyncpg.connect(url)
    await db.execute(f"CREATE SCHEMA {schema}")
    try:
        yield f"{url}?search_path={schema}"
    finally:
        await db.execute(f"DROP SCHEMA {schema} CASCADE")
        await db.close()
