"""`tickwheel up`: API, scheduler and workers in one process on an SQLite file."""

from __future__ import annotations

import asyncio
import importlib
import ipaddress
import math
import os
import sys
from pathlib import Path
from typing import Annotated

import typer

from tickwheel import extras, logs
from tickwheel.cli.serving import serve
from tickwheel.config import Settings, env
from tickwheel.node import Node
from tickwheel.storage.factory import open_store
from tickwheel.worker.registry import App

DEFAULTS = Settings()  # the one place defaults are declared


def register(cli: typer.Typer) -> None:
    cli.command("up")(up)


def up(
    host: Annotated[str, typer.Option(envvar=env("host"), help="Address to bind.")] = DEFAULTS.host,
    port: Annotated[int, typer.Option(envvar=env("port"), help="Port to bind.")] = DEFAULTS.port,
    database_url: Annotated[
        str, typer.Option(envvar=env("database_url"), help="Where tasks are stored.")
    ] = DEFAULTS.database_url,
    app: Annotated[
        str | None,
        typer.Option(envvar=env("app"), help="MODULE or MODULE:ATTR holding your tickwheel.App."),
    ] = None,
    concurrency: Annotated[
        int, typer.Option(envvar=env("concurrency"), min=1, max=10_000, help="Tasks run at once.")
    ] = DEFAULTS.concurrency,
    queues: Annotated[
        str, typer.Option(envvar=env("queues"), help="Comma-separated queues this worker pulls.")
    ] = ",".join(DEFAULTS.queues),
    partitions: Annotated[
        int,
        typer.Option(envvar=env("partitions"), min=1, max=4096, help="Partitions of a new store."),
    ] = DEFAULTS.partitions,
    lease_seconds: Annotated[
        float,
        typer.Option(
            envvar=env("lease_seconds"), min=1, max=3600, help="A task's lease without heartbeat."
        ),
    ] = DEFAULTS.lease_seconds,
    partition_lease_seconds: Annotated[
        float,
        typer.Option(
            envvar=env("partition_lease_seconds"),
            min=1,
            max=600,
            help="How long a dead node keeps its partitions.",
        ),
    ] = DEFAULTS.partition_lease_seconds,
    max_payload_bytes: Annotated[
        int,
        typer.Option(
            envvar=env("max_payload_bytes"),
            min=1024,
            max=64 * 1024 * 1024,
            help="The largest task payload accepted (JSON bytes).",
        ),
    ] = DEFAULTS.max_payload_bytes,
    shutdown_grace_seconds: Annotated[
        float,
        typer.Option(
            envvar=env("shutdown_grace_seconds"),
            min=0,
            max=3600,
            help="On SIGTERM, how long running tasks may take to finish before they are "
            "interrupted and given back for a retry.",
        ),
    ] = DEFAULTS.shutdown_grace_seconds,
    max_streams: Annotated[
        int,
        typer.Option(
            envvar=env("max_streams"),
            min=1,
            max=10_000,
            help="Dashboard event streams open at once.",
        ),
    ] = DEFAULTS.max_streams,
    idempotency_window_seconds: Annotated[
        float,
        typer.Option(
            envvar=env("idempotency_window_seconds"),
            min=1,
            max=30 * 86400,
            help="How long an idempotency key returns the task first made for it.",
        ),
    ] = DEFAULTS.idempotency_window_seconds,
    retention_days: Annotated[
        str | None,
        typer.Option(
            envvar=env("retention_days"),
            show_default=str(DEFAULTS.retention_days),
            help="Ended tasks, with their executions and idempotency keys, are deleted this"
            " many days after they end (never within the idempotency window); empty keeps"
            " every task.",
        ),
    ] = None,
    max_ready_depth: Annotated[
        int,
        typer.Option(
            envvar=env("max_ready_depth"),
            min=1,
            help="Submissions get 429 while more due tasks than this wait for workers.",
        ),
    ] = DEFAULTS.max_ready_depth,
    max_drain_seconds: Annotated[
        float,
        typer.Option(
            envvar=env("max_drain_seconds"),
            min=1,
            help="Submissions get 429 while the due backlog needs longer than this to drain.",
        ),
    ] = DEFAULTS.max_drain_seconds,
    http_allow: Annotated[
        str,
        typer.Option(
            envvar=env("http_allow"),
            help="http tasks may call only these (comma-separated hosts, *.domains, IPs, "
            "networks); empty: any.",
        ),
    ] = DEFAULTS.http_allow,
    http_deny: Annotated[
        str,
        typer.Option(envvar=env("http_deny"), help="http tasks may never call these (same forms)."),
    ] = DEFAULTS.http_deny,
    strict_task_types: Annotated[
        bool,
        typer.Option(
            envvar=env("strict_task_types"),
            help="Refuse (422) a task whose type no live worker has registered, instead of "
            "a 201 with a warning.",
        ),
    ] = DEFAULTS.strict_task_types,
    tracing: Annotated[
        bool,
        typer.Option(
            envvar=env("tracing"),
            help="OpenTelemetry spans of each task (pip install 'tickwheel[otel]'), exported "
            "over OTLP (OTEL_EXPORTER_OTLP_ENDPOINT).",
        ),
    ] = DEFAULTS.tracing,
    worker: Annotated[
        bool,
        typer.Option(
            envvar=env("worker"),
            help="Run tasks in this process too (--no-worker: only remote workers do).",
        ),
    ] = True,
    insecure: Annotated[
        bool,
        typer.Option(
            envvar=env("insecure"),
            help="Serve beyond loopback even though no API token exists (anyone can submit).",
        ),
    ] = False,
    log_level: Annotated[str, typer.Option(envvar=env("log_level"))] = "info",
    log_format: Annotated[
        str, typer.Option(envvar=env("log_format"), help="text, or json: one object per line.")
    ] = DEFAULTS.log_format,
) -> None:
    """Run Tickwheel embedded: API, scheduler and a worker pool in one process."""
    try:
        logs.configure(log_level, log_format)
    except ValueError as error:
        raise typer.BadParameter(str(error), param_hint="--log-format") from None
    settings = Settings(
        host=host,
        port=port,
        database_url=database_url,
        app=app,
        concurrency=concurrency,
        queues=tuple(q.strip() for q in queues.split(",") if q.strip()),
        partitions=partitions,
        lease_seconds=lease_seconds,
        partition_lease_seconds=partition_lease_seconds,
        max_payload_bytes=max_payload_bytes,
        strict_task_types=strict_task_types,
        shutdown_grace_seconds=shutdown_grace_seconds,
        max_streams=max_streams,
        idempotency_window_seconds=idempotency_window_seconds,
        retention_days=_days(retention_days),
        max_ready_depth=max_ready_depth,
        max_drain_seconds=max_drain_seconds,
        http_allow=http_allow,
        http_deny=http_deny,
        log_format=log_format,
        tracing=tracing,
    )
    extras.require_for(settings.database_url, settings.redis_url)
    if tracing:
        extras.require(extras.OTEL)
    if not insecure and not _loopback(host) and not asyncio.run(_has_tokens(settings)):
        typer.echo(
            f"refusing to serve on {host} with no API token: anyone could submit tasks."
            " Create one (tickwheel token create) or pass --insecure.",
            err=True,
        )
        raise typer.Exit(2)
    node = Node(settings=settings, app=load_app(app) if app else None, run_worker=worker)
    typer.echo(f"Tickwheel listening on http://{host}:{port} (store: {database_url})")
    serve(node, log_level=log_level)


def load_app(spec: str) -> App:
    """Import `module` or `module:attr` (default attr `app`), looking in the current folder too."""
    module_name, _, attr = spec.partition(":")
    if str(Path.cwd()) not in sys.path:
        sys.path.insert(0, str(Path.cwd()))
    try:
        module = importlib.import_module(module_name)
    except ImportError as error:
        message = f"cannot import {module_name!r}: {error}"
        raise typer.BadParameter(message, param_hint="--app") from None
    found = getattr(module, attr or "app", None)
    if not isinstance(found, App):
        raise typer.BadParameter(
            f"{spec!r} does not name a tickwheel.App (set MODULE:ATTR)", param_hint="--app"
        )
    return found


def _days(text: str | None) -> float | None:
    """`--retention-days`: a number of days, or empty for no retention. Click reads an
    empty variable as unset, so the variable is looked at again here."""
    if text is None:
        text = os.environ.get(env("retention_days"), str(DEFAULTS.retention_days or ""))
    if not text.strip():
        return None
    try:
        days = float(text)
    except ValueError:
        days = -1.0
    if not (math.isfinite(days) and days >= 0):
        message = f"{text!r} is not a number of days (empty: keep every task)"
        raise typer.BadParameter(message, param_hint="--retention-days")
    return days


def _loopback(host: str) -> bool:
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host.strip("[]")).is_loopback
    except ValueError:
        return False


async def _has_tokens(settings: Settings) -> bool:
    """Whether a token was ever made: revoking them all does not open the API."""
    store = await open_store(settings.database_url, partitions=settings.partitions)
    try:
        return bool(await store.list_tokens())
    finally:
        await store.close()
