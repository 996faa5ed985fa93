"""A real cluster (API, schedulers and workers as processes over PostgreSQL and Redis)
losing processes and servers at the worst moments."""

from __future__ import annotations

import time
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest
from cluster import Cluster
from harness import wait_for

TTL = 3  # partition lease seconds
SETTINGS = {
    "TICKWHEEL_PARTITIONS": "32",
    "TICKWHEEL_PARTITION_LEASE_SECONDS": str(TTL),
    "TICKWHEEL_LEASE_SECONDS": "5",
    "TICKWHEEL_CONCURRENCY": "256",
}


@pytest.fixture
def cluster(tmp_path: Path) -> Iterator[Cluster]:
    made = Cluster(tmp_path, **SETTINGS)
    try:
        yield made
    finally:
        made.close()


def submit_due_at(cluster: Cluster, count: int, due: datetime) -> list[str]:
    ids: list[str] = []
    body = {"task_type": "noop", "schedule": {"type": "delayed", "due_time": due.isoformat()}}
    with cluster.client() as http:
        for start in range(0, count, 10_000):
            batch = {"tasks": [body] * min(10_000, count - start)}
            answer = http.post("/api/tasks/batch", json=batch)
            assert answer.status_code == 201, answer.text
            ids += [t["task_id"] for t in answer.json()["tasks"]]
    return ids


def test_kill_9_of_the_busiest_scheduler_just_before_the_due_time(cluster: Cluster) -> None:
    schedulers = [cluster.start("scheduler", f"scheduler-{i}") for i in range(3)]
    for i in range(2):
        cluster.start("worker", f"worker-{i}")
    cluster.start_api()
    assert wait_for(lambda: len(cluster.owners()) == 3, timeout=30), cluster.logs()

    due = datetime.now(UTC).replace(microsecond=0) + timedelta(seconds=8)
    ids = submit_due_at(cluster, 20_000, due)
    owners = cluster.owners()
    busiest = max(owners, key=lambda name: owners[name])
    victim = next(p for p in schedulers if p.name == busiest)
    dead_partitions = {
        r[0]
        for r in cluster.query("SELECT partition FROM partition_leases WHERE owner = $1", busiest)
    }
    time.sleep(max(0.0, due.timestamp() - time.time() - 1))
    victim.kill()  # one second before 20,000 tasks are due

    def all_succeeded() -> bool:
        rows = cluster.query("SELECT count(*) FROM tasks WHERE status = 'succeeded'")
        return rows[0][0] == len(ids)

    assert wait_for(all_succeeded, timeout=90), cluster.logs()
    due_ms = round(due.timestamp() * 1000)
    rows = cluster.query("SELECT partition, triggered_at, started_at FROM tasks")
    assert all(r[2] >= due_ms for r in rows), "a task started before its due time"
    late = [r[1] - due_ms for r in rows if r[0] in dead_partitions]
    assert late and max(late) <= (TTL + 2) * 1000, f"failover took {max(late)} ms"
    runs = cluster.query(
        "SELECT task_seq, count(*) FROM executions WHERE outcome = 'succeeded' GROUP BY task_seq"
        " HAVING count(*) > 1"
    )
    assert runs == [], "a task was completed twice"
