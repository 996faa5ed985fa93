"""Settings of a Tickwheel node. Every CLI flag has its `TICKWHEEL_*` twin, declared here."""

from __future__ import annotations

from dataclasses import dataclass


def env(name: str) -> str:
    """The environment variable that stands in for a flag."""
    return f"TICKWHEEL_{name.upper()}"


@dataclass(frozen=True, slots=True, kw_only=True)
class Settings:
    host: str = "127.0.0.1"
    port: int = 8700
    database_url: str = "sqlite:///./tickwheel.db"
    app: str | None = None
    partitions: int = 16
    queues: tuple[str, ...] = ("default",)
    concurrency: int = 64
    lease_seconds: float = 30.0
    partition_lease_seconds: float = 15.0
    # Share the partitions with the other scheduler nodes alive (distributed mode);
    # off, a node takes every partition it can (embedded mode).
    balance_partitions: bool = False
    horizon_seconds: float = 60.0
    max_payload_bytes: int = 256 * 1024
    max_batch_bytes: int = 32 * 1024 * 1024
    idempotency_window_seconds: float = 86400.0
    http_allow: str = ""  # comma-separated hosts, *.domains, IPs and networks
    http_deny: str = ""
    max_ready_depth: int = 1_000_000
    max_drain_seconds: float = 300.0
    shutdown_grace_seconds: float = 30.0
    node_id: str | None = None
