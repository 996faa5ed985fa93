"""Tasks due now go from the API to the ready queue right after their commit, not through
a scheduler's load; an API node killed between the commit and the push loses none."""

from __future__ import annotations

import contextlib
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from urllib.parse import urlsplit

import httpx
import pytest
from cluster import Cluster, cluster_in
from proxy import Proxy
from services import require

from tickwheel.ids import new_id

SETTINGS = {
    "TICKWHEEL_PARTITIONS": "8",
    "TICKWHEEL_PARTITION_LEASE_SECONDS": "3",
    "TICKWHEEL_LEASE_SECONDS": "2",
    "TICKWHEEL_RECONCILE_AFTER_SECONDS": "2",
}


@pytest.fixture
def cluster(tmp_path: Path) -> Iterator[Cluster]:
    with cluster_in(tmp_path, **SETTINGS) as made:
        yield made


def statuses(cluster: Cluster, ids: list[str]) -> dict[str, tuple[str, int]]:
    rows = cluster.query(
        "SELECT task_id, status, attempts FROM tasks WHERE task_id = ANY($1::text[])", ids
    )
    return {r[0]: (r[1], r[2]) for r in rows}


def test_a_task_due_now_runs_with_no_scheduler_at_all(cluster: Cluster) -> None:
    """No scheduler runs: only the API's push can bring the task to the worker."""
    cluster.start("worker", "worker")
    cluster.start_api()
    with cluster.client() as http:
        task_id = http.post("/api/tasks", json={"task_type": "noop"}).json()["task_id"]
        later = http.post(
            "/api/tasks",
            json={"task_type": "noop", "schedule": {"type": "delayed", "delay_seconds": 0.5}},
        ).json()["task_id"]
        deadline = time.monotonic() + 10
        while (task := http.get(f"/api/tasks/{task_id}").json())["status"] != "succeeded":
            assert time.monotonic() < deadline, (task, cluster.logs())
            time.sleep(0.05)
        time.sleep(1)
        # A delayed task waits for a scheduler's wheel, as it should.
        assert http.get(f"/api/tasks/{later}").json()["status"] == "pending"
    assert task["triggered_at"] is not None


def test_kill_9_of_the_api_between_commit_and_push_loses_no_task(cluster: Cluster) -> None:
    redis = urlsplit(require("redis"))
    with Proxy(redis.hostname or "127.0.0.1", redis.port or 6379) as proxy:
        cluster.start("scheduler", "scheduler")
        cluster.start("worker", "worker")
        through_proxy = f"redis://127.0.0.1:{proxy.port}{redis.path}"
        api = cluster.start_api(TICKWHEEL_REDIS_URL=through_proxy)
        ids = [new_id() for _ in range(50)]
        body = {"tasks": [{"task_id": i, "task_type": "noop"} for i in ids]}
        proxy.freeze()  # the API's next round trip to Redis (the push) hangs

        def submit() -> None:
            http = httpx.Client(base_url=cluster.api_url, timeout=60)
            with http, contextlib.suppress(httpx.HTTPError):  # it dies before it answers
                http.post("/api/tasks/batch", json=body)

        submitting = threading.Thread(target=submit, daemon=True)
        submitting.start()
        deadline = time.monotonic() + 20
        while len(statuses(cluster, ids)) < len(ids):  # committed, not yet pushed
            assert time.monotonic() < deadline, cluster.logs()
            time.sleep(0.02)
        api.kill()
        assert {s for s, _ in statuses(cluster, ids).values()} == {"pending"}
        proxy.thaw()

        deadline = time.monotonic() + 60
        while {s for s, _ in statuses(cluster, ids).values()} != {"succeeded"}:
            assert time.monotonic() < deadline, (statuses(cluster, ids), cluster.logs())
            time.sleep(0.2)
        found = statuses(cluster, ids)
    assert all(attempts == 1 for _, attempts in found.values())
