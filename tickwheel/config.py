"""Settings of a Tickwheel node. Every CLI flag has its `TICKWHEEL_*` twin, declared here."""

from __future__ import annotations

import os
import types
from dataclasses import dataclass, fields, replace
from enum import StrEnum
from typing import Any, get_type_hints


def env(name: str) -> str:
    """The environment variable that stands in for a flag."""
    return f"TICKWHEEL_{name.upper()}"


class Role(StrEnum):
    """What a process does. `tickwheel up` does all three; a cluster runs them apart."""

    API = "api"  # serves the HTTP API (submissions, reads, remote workers)
    SCHEDULER = "scheduler"  # owns partitions: triggers, resolvers, reaper
    WORKER = "worker"  # runs tasks


DEFAULT_PREFETCH = 256


@dataclass(frozen=True, slots=True, kw_only=True)
class Settings:
    host: str = "127.0.0.1"
    port: int = 8700
    database_url: str = "sqlite:///./tickwheel.db"
    redis_url: str | None = None  # the ready queue on Redis; None: in this process
    redis_prefix: str = "tickwheel:"  # of every key: clusters can share one Redis
    app: str | None = None
    partitions: int = 16
    queues: tuple[str, ...] = ("default",)
    concurrency: int = 64
    # The most tasks a worker claims ahead of free slots, as its start rate asks (0: off;
    # see `Worker` and `worker/ahead.py`): it hides the round trips to the ready queue
    # and the store, a host away or (embedded) a process away.
    prefetch: int = DEFAULT_PREFETCH
    lease_seconds: float = 30.0
    partition_lease_seconds: float = 15.0
    # Share the partitions with the other scheduler nodes alive (distributed mode);
    # off, a node takes every partition it can (embedded mode).
    balance_partitions: bool = False
    horizon_seconds: float = 60.0
    # With a Redis ready queue: due tasks unclaimed this long are released again.
    reconcile_after_seconds: float = 30.0
    migrate: bool = True  # apply the store's migrations at start (PostgreSQL)
    # Ended tasks go after `retention_days` (empty: keep forever; never within the
    # idempotency window on SQLite, which deletes them in batches). PostgreSQL keeps
    # tasks in ranges, each opened for `task_range_hours`, and drops whole ranges older
    # than the retention whose tasks have all ended.
    task_range_hours: float = 24.0
    retention_days: float | None = 30.0
    max_payload_bytes: int = 256 * 1024
    # Refuse (422) a task whose type no live worker has registered, instead of
    # accepting it with a warning; the built-in types are always accepted.
    strict_task_types: bool = False
    max_batch_bytes: int = 32 * 1024 * 1024
    idempotency_window_seconds: float = 86400.0
    http_allow: str = ""  # comma-separated hosts, *.domains, IPs and networks
    http_deny: str = ""
    max_ready_depth: int = 1_000_000
    max_drain_seconds: float = 300.0
    shutdown_grace_seconds: float = 30.0
    max_streams: int = 64  # dashboard event streams open at once on this node
    node_id: str | None = None
    log_format: str = "text"  # or "json": one object per line (see tickwheel/logs.py)
    # OpenTelemetry spans of each task, one trace per submitting request (tracing.py);
    # exported over OTLP unless the program set a tracer provider.
    tracing: bool = False

    def from_env(self, environ: dict[str, str] | None = None) -> Settings:
        """These settings with every `TICKWHEEL_*` variable that is set applied."""
        environ = dict(os.environ) if environ is None else environ
        hints = get_type_hints(Settings)
        found = {
            f.name: _parse(environ[env(f.name)], hints[f.name], env(f.name))
            for f in fields(self)
            if env(f.name) in environ
        }
        return replace(self, **found)


def _parse(text: str, kind: Any, name: str) -> Any:
    """One setting from its variable: text, a number, a flag or a comma list."""
    if isinstance(kind, types.UnionType):  # X | None: empty text is None
        if not text:
            return None
        kind = next(k for k in kind.__args__ if k is not type(None))
    try:
        if kind is bool:
            if text.lower() not in ("1", "true", "yes", "0", "false", "no"):
                raise ValueError(text)
            return text.lower() in ("1", "true", "yes")
        if kind in (int, float):
            return kind(text)
        if kind == tuple[str, ...]:
            return tuple(part.strip() for part in text.split(",") if part.strip())
    except ValueError:
        raise ValueError(f"{name}={text!r} is not a valid {kind.__name__}") from None
    return text
