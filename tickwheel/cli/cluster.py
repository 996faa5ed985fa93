"""`tickwheel api`, `scheduler`, `worker` and `migrate`: the roles of a cluster, run apart.

Each process reads its settings from `TICKWHEEL_*` variables (TICKWHEEL_DATABASE_URL,
TICKWHEEL_REDIS_URL, ...), with a few flags of its own, and stops gracefully on
SIGTERM or SIGINT.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import math
import signal
from dataclasses import replace
from typing import Annotated

import typer

from tickwheel import extras, logs
from tickwheel.cli import heap
from tickwheel.cli.local_cluster import local_cluster
from tickwheel.cli.serving import serve
from tickwheel.cli.up import load_app
from tickwheel.config import Role, Settings, env
from tickwheel.node import Node
from tickwheel.outage import Outage
from tickwheel.storage.factory import open_store_when_reachable

log = logging.getLogger(__name__)
LOG_LEVEL = Annotated[str, typer.Option(envvar=env("log_level"))]


def register(cli: typer.Typer) -> None:
    cli.command()(api)
    cli.command()(scheduler)
    cli.command()(worker)
    cli.command()(migrate)
    cli.command("local-cluster")(local_cluster)


def _settings(log_level: str, *, needs_redis: bool = True) -> Settings:
    try:
        settings = Settings().from_env()
        logs.configure(log_level, settings.log_format)
    except ValueError as error:
        raise typer.BadParameter(str(error)) from None
    if not settings.database_url.startswith(("postgresql://", "postgres://")):
        raise typer.BadParameter(f"set {env('database_url')} to a postgresql:// URL")
    if needs_redis and not settings.redis_url:
        raise typer.BadParameter(f"set {env('redis_url')} to a redis:// URL")
    extras.require_for(settings.database_url, settings.redis_url if needs_redis else None)
    for name in ("partition_lease_seconds", "lease_seconds", "reconcile_after_seconds"):
        if not 0 < getattr(settings, name) < math.inf:
            raise typer.BadParameter(f"{env(name)} must be a positive number of seconds")
    if not settings.queues:
        raise typer.BadParameter(f"{env('queues')} names no queue")
    return settings


def api(
    host: Annotated[str | None, typer.Option(help="Address to bind.")] = None,
    port: Annotated[int | None, typer.Option(help="Port to bind.")] = None,
    strict_task_types: Annotated[
        bool,
        typer.Option(
            "--strict-task-types",
            envvar=env("strict_task_types"),
            help="Refuse (422) a task whose type no live worker has registered.",
        ),
    ] = False,
    log_level: LOG_LEVEL = "info",
) -> None:
    """Serve the HTTP API (and the worker protocol) of a cluster."""
    settings = _settings(log_level)
    settings = replace(
        settings,
        host=host or settings.host,
        port=port or settings.port,
        strict_task_types=strict_task_types or settings.strict_task_types,
    )
    node = Node(settings=settings, roles=frozenset({Role.API}))
    typer.echo(f"Tickwheel API listening on http://{settings.host}:{settings.port}")
    serve(node, log_level=log_level)


def scheduler(log_level: LOG_LEVEL = "info") -> None:
    """Trigger tasks: take a fair share of the partitions, and take over a dead node's."""
    settings = replace(_settings(log_level), balance_partitions=True)
    asyncio.run(_run(Node(settings=settings, roles=frozenset({Role.SCHEDULER}))))


def worker(
    app: Annotated[
        str | None, typer.Option(help="MODULE or MODULE:ATTR holding your tickwheel.App.")
    ] = None,
    queues: Annotated[str | None, typer.Option(help="Comma-separated queues to pull.")] = None,
    concurrency: Annotated[int | None, typer.Option(min=1, max=10_000)] = None,
    log_level: LOG_LEVEL = "info",
) -> None:
    """Run tasks: your handlers (--app), or without it the built-in task types."""
    settings = _settings(log_level)
    if queues is not None:
        names = tuple(q.strip() for q in queues.split(",") if q.strip())
        if not names:
            raise typer.BadParameter("name at least one queue", param_hint="--queues")
        settings = replace(settings, queues=names)
    if concurrency is not None:
        settings = replace(settings, concurrency=concurrency)
    spec = app or settings.app
    handlers = load_app(spec) if spec else None
    asyncio.run(_run(Node(settings=settings, app=handlers, roles=frozenset({Role.WORKER}))))


def migrate(log_level: LOG_LEVEL = "info") -> None:
    """Apply the store's schema migrations (api and scheduler also do at start)."""
    settings = _settings(log_level, needs_redis=False)

    async def apply() -> None:
        store = await open_store_when_reachable(
            settings.database_url,
            health=Outage("the store", log),
            partitions=settings.partitions,
            name="tickwheel-migrate",
        )
        await store.close()

    asyncio.run(apply())
    typer.echo("migrations applied")


async def _run(node: Node) -> None:
    """Run `node` until SIGTERM or SIGINT, then stop it gracefully. A signal that comes
    while the node is still starting (a slow migration, a store not up yet) cancels the
    start, which closes what it had opened."""
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGTERM, signal.SIGINT):
        loop.add_signal_handler(sig, stop.set)
    starting = asyncio.create_task(node.start())
    stopping = asyncio.create_task(stop.wait())
    await asyncio.wait({starting, stopping}, return_when=asyncio.FIRST_COMPLETED)
    if not starting.done():
        starting.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await starting
        return
    stopping.cancel()
    starting.result()  # a start that failed: its error, and the exit status with it
    heap.settle()
    try:
        await stop.wait()
    finally:
        await node.stop()
