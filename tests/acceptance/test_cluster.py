"""A real cluster (API, schedulers and workers as processes over PostgreSQL and Redis)
losing processes and servers at the worst moments."""

from __future__ import annotations

import contextlib
import os
import re
import signal
import socket
import subprocess
import time
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path

import asyncpg
import httpx
import pytest
from cluster import Cluster, cluster_in
from harness import TICKWHEEL, Target, free_port, wait_for
from servers import PrivatePostgres, PrivateRedis
from services import require

TTL = 3  # partition lease seconds
SETTINGS = {
    "TICKWHEEL_PARTITIONS": "32",
    "TICKWHEEL_PARTITION_LEASE_SECONDS": str(TTL),
    "TICKWHEEL_LEASE_SECONDS": "2",
    "TICKWHEEL_CONCURRENCY": "256",
    "TICKWHEEL_RECONCILE_AFTER_SECONDS": "3",
}


@pytest.fixture
def cluster(tmp_path: Path) -> Iterator[Cluster]:
    with cluster_in(tmp_path, **SETTINGS) as made:
        yield made


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


def test_a_paused_worker_cannot_overwrite_the_rerun(cluster: Cluster, target: Target) -> None:
    """SIGSTOP past the lease, then SIGCONT: another worker runs the task again, and the
    paused worker's late completion is refused (seed 002, the paused-worker case)."""
    target.delays["/slow"] = 3.0
    cluster.start("scheduler", "scheduler-0")
    workers = {name: cluster.start("worker", name) for name in ("worker-0", "worker-1")}
    cluster.start_api()
    body = {
        "task_type": "http",
        "payload": {"url": f"{target.url}/slow"},
        "retry_backoff": {"base_seconds": 0.1, "max_seconds": 0.2},
    }
    with cluster.client() as http:
        task_id = http.post("/api/tasks", json=body).json()["task_id"]
    assert wait_for(lambda: len(target.calls_to("/slow")) == 1, timeout=30), cluster.logs()
    (first_holder,) = cluster.query("SELECT worker_id FROM tasks WHERE task_id = $1", task_id)
    paused = workers[first_holder[0]]
    paused.signal(signal.SIGSTOP)
    try:
        with cluster.client() as http:

            def rerun_succeeded() -> bool:
                return http.get(f"/api/tasks/{task_id}").json()["status"] == "succeeded"

            assert wait_for(rerun_succeeded, timeout=30), cluster.logs()
    finally:
        paused.signal(signal.SIGCONT)
    time.sleep(4)  # the paused worker wakes, its call returns, and it tries to complete
    rows = cluster.query(
        "SELECT e.attempt, e.worker_id, e.outcome FROM executions AS e"
        " JOIN tasks AS t ON t.seq = e.task_seq WHERE t.task_id = $1 ORDER BY e.id",
        task_id,
    )
    outcomes = [(r[0], r[1], r[2]) for r in rows]
    assert outcomes[0] == (1, first_holder[0], "lease_expired")
    succeeded = [o for o in outcomes if o[2] == "succeeded"]
    assert len(succeeded) == 1 and succeeded[0][1] != first_holder[0], outcomes
    with cluster.client() as http:
        final = http.get(f"/api/tasks/{task_id}").json()
    assert final["status"] == "succeeded" and final["worker_id"] != first_holder[0]


@pytest.mark.parametrize("server", ["redis", "postgres"])
def test_a_server_restart_mid_run_loses_no_task(
    tmp_path: Path,
    target: Target,
    server: str,
    private_redis: PrivateRedis,
    private_postgres: PrivatePostgres,
) -> None:
    """Redis restarted with its data gone, or PostgreSQL restarted, while a backlog of
    due tasks waits in the ready queue and workers run: every task still succeeds. The
    servers restarted are the test's own, never the machine's."""
    target.delays["/t"] = 0.05  # 2 workers x 16 at a time: ~600 calls/s, a 5 s backlog
    restart = private_redis.restart if server == "redis" else private_postgres.restart
    settings = {**SETTINGS, "TICKWHEEL_CONCURRENCY": "16"}
    with cluster_in(
        tmp_path, database_url=private_postgres.url, redis_url=private_redis.url, **settings
    ) as cluster:
        for i in range(2):
            cluster.start("scheduler", f"scheduler-{i}")
            cluster.start("worker", f"worker-{i}")
        cluster.start_api()
        assert wait_for(lambda: len(cluster.owners()) == 2, timeout=30), cluster.logs()
        due = datetime.now(UTC) + timedelta(seconds=3)
        body = {
            "task_type": "http",
            "payload": {"url": f"{target.url}/t", "method": "GET"},
            "schedule": {"type": "delayed", "due_time": due.isoformat()},
        }
        with cluster.client() as http:
            answer = http.post("/api/tasks/batch", json={"tasks": [body] * 3_000})
            assert answer.status_code == 201, answer.text
        time.sleep(max(0.0, due.timestamp() + 1.5 - time.time()))
        assert 0 < len(target.calls_to("/t")) < 3_000  # mid-run, a backlog queued
        restart()

        def all_succeeded() -> bool:
            try:
                rows = cluster.query("SELECT count(*) FROM tasks WHERE status = 'succeeded'")
            except (OSError, asyncpg.PostgresError):
                return False  # still restarting
            return bool(rows[0][0] == 3_000)

        assert wait_for(all_succeeded, timeout=120, interval=0.5), cluster.logs()
        assert {c.path for c in target.calls} == {"/t"}


def test_the_local_cluster_recipe_runs_tasks_and_stops_cleanly(tmp_path: Path) -> None:
    """`tickwheel local-cluster`, as the README prints it, against a fresh schema."""
    cluster = Cluster(tmp_path)  # only for its schema, Redis prefix and queries
    port = free_port()
    log = tmp_path / "local-cluster.log"
    with log.open("wb") as out:
        recipe = subprocess.Popen(
            [
                TICKWHEEL,
                "local-cluster",
                "--schedulers",
                "2",
                "--workers",
                "2",
                "--port",
                str(port),
            ],
            env=cluster.env,
            stdout=out,
            stderr=subprocess.STDOUT,
        )
    try:
        url = f"http://127.0.0.1:{port}"

        def api_up() -> bool:
            try:
                return httpx.get(f"{url}/healthz", timeout=1).status_code == 200
            except httpx.HTTPError:
                return False

        assert wait_for(api_up, timeout=60), log.read_text()
        with httpx.Client(base_url=url, timeout=30) as http:
            task_id = http.post("/api/tasks", json={"task_type": "noop"}).json()["task_id"]
            assert wait_for(
                lambda: http.get(f"/api/tasks/{task_id}").json()["status"] == "succeeded",
                timeout=30,
            ), log.read_text()
        # Both schedulers share the partitions once the second has joined.
        assert wait_for(lambda: len(cluster.owners()) == 2, timeout=40), log.read_text()
        recipe.send_signal(signal.SIGTERM)
        assert recipe.wait(60) == 0
        text = log.read_text()
        pids = [int(p) for p in re.findall(r"\(pid (\d+)\)", text)]
        assert len(pids) == 5 and text.count("stopped ") == 5
        assert not any(Path(f"/proc/{pid}").exists() for pid in pids), "a child outlived it"
    finally:
        if recipe.poll() is None:
            recipe.kill()
            recipe.wait(10)
        for pid in map(int, re.findall(r"\(pid (\d+)\)", log.read_text())):
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGKILL)  # none must outlive a failed test
        cluster.close()


def test_sigterm_while_a_scheduler_is_still_starting_stops_it(tmp_path: Path) -> None:
    """A store that accepts connections and never answers keeps the start waiting;
    SIGTERM still stops the process at once instead of after the connect timeout."""
    silent = socket.socket()
    silent.bind(("127.0.0.1", 0))
    silent.listen(8)  # accepted by the kernel, never answered
    port = silent.getsockname()[1]
    env = {
        **os.environ,
        "TICKWHEEL_DATABASE_URL": f"postgresql://postgres@127.0.0.1:{port}/postgres",
        "TICKWHEEL_REDIS_URL": require("redis"),
    }
    try:
        process = subprocess.Popen(
            [TICKWHEEL, "scheduler"], env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE
        )
        time.sleep(3)  # importing, then waiting on the silent store
        assert process.poll() is None, process.stderr.read() if process.stderr else ""
        process.send_signal(signal.SIGTERM)
        assert process.wait(10) is not None
    finally:
        if process.poll() is None:
            process.kill()
            process.wait(10)
        if process.stderr:
            process.stderr.close()
        silent.close()
