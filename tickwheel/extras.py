"""Distributed mode's client libraries, and the one place that says which extra brings
each. The base install runs embedded (SQLite, a ready queue in the process); a URL that
names PostgreSQL or Redis needs its extra, and `require` says so in one line before
anything imports the library."""

from __future__ import annotations

from importlib.util import find_spec
from typing import NamedTuple
from urllib.parse import urlsplit

from tickwheel.errors import MissingExtra


class Extra(NamedTuple):
    needed_by: str  # what needs the library, as the message says
    module: str  # the library the extra brings
    name: str  # pip install 'tickwheel[NAME]'


POSTGRES = Extra("the PostgreSQL store", "asyncpg", "postgres")
REDIS = Extra("the Redis ready queue", "redis", "redis")
OTEL = Extra("tracing", "opentelemetry.sdk", "otel")
POSTGRES_SCHEMES = ("postgresql", "postgres")


def require(extra: Extra) -> None:
    """Raise `MissingExtra`, naming the extra to install, when its library is absent."""
    if find_spec(extra.module) is None:
        raise MissingExtra(
            f"{extra.needed_by} needs {extra.module}: pip install 'tickwheel[{extra.name}]'"
        )


def require_for(database_url: str, redis_url: str | None) -> None:
    """`require` for each backend these URLs name, so that a command fails at once, in
    one line, before it serves; the factories check again where they open a backend."""
    if urlsplit(database_url).scheme in POSTGRES_SCHEMES:
        require(POSTGRES)
    if redis_url:
        require(REDIS)
