"""Expiry under kill -9, embedded and distributed: a process dies at the worst moment,
and still no task starts after its expiry, none is lost, and each ends as it should."""

from __future__ import annotations

import time
from collections import Counter
from collections.abc import Iterator
from datetime import datetime
from pathlib import Path
from typing import Any

import httpx
import pytest
from cluster import Cluster, cluster_in
from harness import Target, wait_for

FAST_LEASES = {"TICKWHEEL_LEASE_SECONDS": "2", "TICKWHEEL_PARTITION_LEASE_SECONDS": "2"}
SETTINGS = {
    "TICKWHEEL_PARTITIONS": "16",
    "TICKWHEEL_PARTITION_LEASE_SECONDS": "3",
    "TICKWHEEL_LEASE_SECONDS": "2",
}


@pytest.fixture
def cluster(tmp_path: Path) -> Iterator[Cluster]:
    with cluster_in(tmp_path, **SETTINGS) as made:
        yield made


def submit(http: httpx.Client, target: Target, path: str, count: int, **body: Any) -> list[str]:
    tasks = [
        {"task_type": "http", "payload": {"url": f"{target.url}{path}"}, **body}
        for _ in range(count)
    ]
    answer = http.post("/api/tasks/batch", json={"tasks": tasks})
    assert answer.status_code == 201, answer.text
    return [t["task_id"] for t in answer.json()["tasks"]]


def statuses(http: httpx.Client, ids: list[str]) -> Counter[str]:
    return Counter(http.get(f"/api/tasks/{i}").json()["status"] for i in ids)


def all_in(http: httpx.Client, ids: list[str], status: str, timeout: float = 30) -> bool:
    return wait_for(lambda: statuses(http, ids) == {status: len(ids)}, timeout=timeout)


def started_in_time(http: httpx.Client, target: Target, ids: list[str]) -> None:
    """Every call to a task came before its expiry (a call is a start of its handler)."""
    for task_id in ids:
        task = http.get(f"/api/tasks/{task_id}").json()
        expires = datetime.fromisoformat(task["expires_at"]).timestamp()
        calls = [c for c in target.calls if c.task_id == task_id]
        assert all(c.at < expires for c in calls), (task, calls)


def delayed(seconds: float) -> dict[str, Any]:
    return {"type": "delayed", "delay_seconds": seconds}


def test_kill_9_before_the_due_time_and_back_after_the_expiry_runs_nothing_late(
    tickwheel_factory: type, target: Target, tmp_path: Path
) -> None:
    db = tmp_path / "expiry.db"
    first = tickwheel_factory.start(db, extra_env=FAST_LEASES)
    with first.client() as http:
        late = submit(http, target, "/late", 50, schedule=delayed(1), expires_after_seconds=1)
        kept = submit(http, target, "/kept", 50, schedule=delayed(1), expires_after_seconds=120)
    first.kill()  # before either is due
    time.sleep(2.5)  # the first 50 expire while no process runs
    second = tickwheel_factory.start(db, extra_env=FAST_LEASES)
    with second.client() as http:
        assert all_in(http, late, "expired"), statuses(http, late)
        assert all_in(http, kept, "succeeded"), statuses(http, kept)
    assert target.calls_to("/late") == []
    assert Counter(c.task_id for c in target.calls_to("/kept")) == dict.fromkeys(kept, 1)


def test_kill_9_mid_run_past_the_expiry_is_not_retried_embedded(
    tickwheel_factory: type, target: Target, tmp_path: Path
) -> None:
    target.delays["/slow"] = 3.0
    db = tmp_path / "midrun.db"
    first = tickwheel_factory.start(db, extra_env=FAST_LEASES)
    with first.client() as http:
        ids = submit(http, target, "/slow", 5, expires_after_seconds=1)
    assert wait_for(lambda: len(target.calls_to("/slow")) == 5, timeout=20)
    first.kill()  # mid-run: the lease runs out after the expiry
    second = tickwheel_factory.start(db, extra_env=FAST_LEASES)
    with second.client() as http:
        assert all_in(http, ids, "expired"), statuses(http, ids)
        started_in_time(http, target, ids)
    assert len(target.calls_to("/slow")) == 5  # the first attempts, none again


def test_kill_9_of_a_worker_mid_run_past_the_expiry_is_not_retried(
    cluster: Cluster, target: Target
) -> None:
    target.delays["/slow"] = 3.0
    cluster.start("scheduler", "scheduler-0")
    worker = cluster.start("worker", "worker-0")
    cluster.start_api()
    with cluster.client() as http:
        ids = submit(http, target, "/slow", 5, expires_after_seconds=1)
        assert wait_for(lambda: len(target.calls_to("/slow")) == 5, timeout=30), cluster.logs()
        worker.kill()  # holding every task; its leases run out after their expiry
        cluster.start("worker", "worker-1")
        assert all_in(http, ids, "expired"), statuses(http, ids)
        started_in_time(http, target, ids)
    assert len(target.calls_to("/slow")) == 5
    outcomes = cluster.query("SELECT DISTINCT outcome FROM executions")
    assert [r[0] for r in outcomes] == ["lease_expired"]


def test_kill_9_of_a_scheduler_its_partitions_tasks_still_expire(
    cluster: Cluster, target: Target
) -> None:
    schedulers = [cluster.start("scheduler", f"scheduler-{i}") for i in range(2)]
    cluster.start_api()
    assert wait_for(lambda: len(cluster.owners()) == 2, timeout=30), cluster.logs()
    with cluster.client() as http:
        ids = submit(http, target, "/none", 200, schedule=delayed(1), expires_after_seconds=1)
        schedulers[0].kill()  # no worker runs: every task must expire, in both halves
        assert all_in(http, ids, "expired", timeout=40), statuses(http, ids)
        cluster.start("worker", "worker-0")
        time.sleep(2)  # a worker now would run anything the queue still offered
    assert target.calls_to("/none") == []
