"""One fault scenario: a cluster of separate processes (an API, schedulers, workers) on
a fresh schema and Redis prefix, work flowing through it, the fault, and the verdict."""

from __future__ import annotations

import time
from collections import Counter
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from urllib.parse import urlsplit

from cluster import Cluster, Process, cluster_in
from harness import wait_for
from ledger import Ledger, PostgresRecord, Record, Verdict, record_row
from proxy import Proxy
from stream import Stream

# Short leases, so that a fault's recovery fits a test's time.
SETTINGS = {
    "TICKWHEEL_PARTITIONS": "16",
    "TICKWHEEL_PARTITION_LEASE_SECONDS": "3",
    "TICKWHEEL_LEASE_SECONDS": "2",
    "TICKWHEEL_CONCURRENCY": "64",
    "TICKWHEEL_RECONCILE_AFTER_SECONDS": "3",
    "TICKWHEEL_SHUTDOWN_GRACE_SECONDS": "5",
}


class Running:
    """The processes of a scenario's cluster, by name."""

    def __init__(
        self,
        cluster: Cluster,
        schedulers: int,
        workers: int,
        env_of: dict[str, dict[str, str]] | None = None,
        every: dict[str, str] | None = None,
    ) -> None:
        """`env_of`: settings of some processes only, by name; `every`: of all."""
        self.cluster = cluster
        self.env_of = env_of or {}
        self.every = every or {}
        self.by_name: dict[str, Process] = {}
        for i in range(schedulers):
            self.start("scheduler", f"scheduler-{i}")
        for i in range(workers):
            self.start("worker", f"worker-{i}")
        self.by_name["api"] = cluster.start_api("api", **self.every, **self.env_of.get("api", {}))
        assert wait_for(lambda: len(cluster.owners()) == schedulers, timeout=30), cluster.logs()
        # Work flows only once every worker pulls: on a loaded machine a worker can take
        # seconds to start, and a fault struck before then would strike nothing.
        assert wait_for(lambda: len(self.live_workers()) >= workers, timeout=30), cluster.logs()

    def live_workers(self) -> list[str]:
        """The workers that reported themselves alive, by the store's clock."""
        rows = self.cluster.query(
            "SELECT worker_id FROM workers"
            " WHERE expires_at >= (extract(epoch FROM clock_timestamp()) * 1000)::bigint"
        )
        return [r[0] for r in rows]

    def start(self, role: str, name: str) -> Process:
        env = {**self.every, **self.env_of.get(name, {})}
        self.by_name[name] = self.cluster.start(role, name, **env)
        return self.by_name[name]

    def restart(self, name: str) -> None:
        """SIGTERM, then the same role again under the same name."""
        old = self.by_name[name]
        old.stop()
        if old.role == "api":
            env = {**self.every, **self.env_of.get(name, {})}
            self.by_name[name] = self.cluster.start_api(name, **env)
        else:
            self.start(old.role, name)


@contextmanager
def links(cluster: Cluster) -> Iterator[tuple[Proxy, Proxy, dict[str, str]]]:
    """Proxies in front of the cluster's PostgreSQL and Redis, and the settings that send
    a process through them. The test's own queries go straight to the store."""
    pg, redis = urlsplit(cluster.database_url), urlsplit(cluster.env["TICKWHEEL_REDIS_URL"])
    with (
        Proxy(pg.hostname or "127.0.0.1", pg.port or 5432) as to_pg,
        Proxy(redis.hostname or "127.0.0.1", redis.port or 6379) as to_redis,
    ):
        env = {
            "TICKWHEEL_DATABASE_URL": to_pg.url_for(cluster.env["TICKWHEEL_DATABASE_URL"]),
            "TICKWHEEL_REDIS_URL": to_redis.url_for(cluster.env["TICKWHEEL_REDIS_URL"]),
        }
        yield to_pg, to_redis, env


@contextmanager
def cluster_for(
    folder: Path, *, database_url: str | None = None, redis_url: str | None = None, **settings: str
) -> Iterator[Cluster]:
    """A cluster with the suite's short leases, on the tests' servers or those named."""
    with cluster_in(
        folder, database_url=database_url, redis_url=redis_url, **{**SETTINGS, **settings}
    ) as made:
        yield made


def run(
    name: str,
    cluster: Cluster,
    ledger: Ledger,
    fault: Callable[[], None],
    *,
    record: Record | None = None,
    rate: float = 200,
    batch: int = 20,
    before_seconds: float = 2,
    after_seconds: float = 3,
    settle_seconds: float = 90,
) -> Verdict:
    """Work flows for `before_seconds`, then `fault` strikes (it returns once the fault
    is over), then work flows `after_seconds` more; every accepted task must end.
    `record`: where the outcome is read (the cluster's PostgreSQL by default)."""
    return run_against(
        name,
        cluster.api_url,
        ledger,
        fault,
        record or PostgresRecord(cluster),
        rate=rate,
        batch=batch,
        before_seconds=before_seconds,
        after_seconds=after_seconds,
        settle_seconds=settle_seconds,
        logs=cluster.logs,
    )


def run_against(
    name: str,
    api_url: str,
    ledger: Ledger,
    fault: Callable[[], None],
    record: Record,
    *,
    rate: float,
    batch: int,
    before_seconds: float,
    after_seconds: float,
    settle_seconds: float,
    logs: Callable[[], str],
) -> Verdict:
    """`run` against any server: embedded (`tickwheel up`) or a cluster's API."""
    with Stream(api_url, ledger, rate=rate, batch=batch):
        time.sleep(before_seconds)
        fault()
        ledger.healed_at = max(ledger.healed_at, time.time())
        time.sleep(after_seconds)
    assert ledger.accepted, "nothing was accepted"
    if not ledger.settle(record, settle_seconds):
        left = Counter(record.statuses(list(ledger.accepted)).values())
        raise AssertionError(f"not ended in {settle_seconds} s: {dict(left)}\n{logs()}")
    return record_row(ledger.verdict(name, record))


def assert_nothing_wrong(verdict: Verdict, *, recovery_seconds: float) -> None:
    """What every scenario must show: nothing lost, no second result accepted, nothing
    early, no 5xx but 503, and recovery within its budget."""
    assert verdict.lost == 0, verdict
    assert verdict.unfenced == 0, verdict
    assert verdict.early == 0, verdict
    assert verdict.server_errors == 0, verdict
    assert verdict.recovery_seconds <= recovery_seconds, verdict
