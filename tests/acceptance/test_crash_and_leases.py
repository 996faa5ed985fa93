"""kill -9 at the worst moments, and two schedulers on one database file."""

from __future__ import annotations

import os
import signal
from collections import Counter
from datetime import datetime
from pathlib import Path
from typing import Any

from harness import Target, wait_for

FAST_LEASES = {"TICKWHEEL_LEASE_SECONDS": "2", "TICKWHEEL_PARTITION_LEASE_SECONDS": "2"}


def _submit(http: object, target: Target, path: str, delay: float, **extra: object) -> str:
    body = {
        "task_type": "http",
        "payload": {"url": f"{target.url}{path}"},
        "schedule": {"type": "delayed", "delay_seconds": delay},
        **extra,
    }
    response = http.post("/api/tasks", json=body)  # type: ignore[attr-defined]
    assert response.status_code == 201, response.text
    return str(response.json()["task_id"])


def test_kill_9_before_trigger_time_then_restart_fires_every_accepted_task(
    tickwheel_factory: type, target: Target, tmp_path: Path
) -> None:
    db = tmp_path / "crash.db"
    first = tickwheel_factory.start(db, extra_env=FAST_LEASES)
    with first.client() as http:
        # Due soon, and due later than the restart: both must fire exactly once.
        ids = [_submit(http, target, f"/t/{i}", delay=1.0 + (i % 5)) for i in range(100)]
    first.kill()  # dies right before the trigger time of the first ones
    second = tickwheel_factory.start(db, extra_env=FAST_LEASES)
    assert wait_for(lambda: len(target.calls) >= 100, timeout=30)
    with second.client() as http:
        assert wait_for(
            lambda: all(http.get(f"/api/tasks/{i}").json()["status"] == "succeeded" for i in ids),
            timeout=20,
        )
    counts = Counter(c.task_id for c in target.calls)
    assert set(counts) == set(ids)
    assert max(counts.values()) == 1


def test_a_restart_after_kill_9_takes_the_partitions_at_once(
    tickwheel_factory: type, target: Target, tmp_path: Path
) -> None:
    """With the default 15 s partition lease, the restarted process does not wait out
    the dead one's lease: the lock on the database file that the dead one held is free,
    so it is gone. A task due 4 s after the crash fires on time."""
    db = tmp_path / "restart.db"
    first = tickwheel_factory.start(db)
    with first.client() as http:
        task_id = _submit(http, target, "/soon", delay=4.0)
        due = datetime.fromisoformat(http.get(f"/api/tasks/{task_id}").json()["due_time"])
    first.kill()
    second = tickwheel_factory.start(db)
    assert wait_for(lambda: bool(target.calls_to("/soon")), timeout=20)
    with second.client() as http:
        assert http.get("/healthz").json()["partitions_owned"] == 16
    late = target.calls_to("/soon")[0].at - due.timestamp()
    assert late < 1.0, f"fired {late:.1f} s after its due time"


def test_a_second_process_on_the_file_says_who_holds_it(
    tickwheel_factory: type, tmp_path: Path
) -> None:
    db = tmp_path / "two.db"
    tickwheel_factory.start(db)
    second = tickwheel_factory.start(db)
    assert wait_for(lambda: "another Tickwheel process" in second.log.read_text(), timeout=5)
    assert f"is running on {db}" in second.log.read_text()


def test_task_whose_worker_died_mid_run_is_retried_after_its_lease_expires(
    tickwheel_factory: type, target: Target, tmp_path: Path
) -> None:
    db = tmp_path / "midrun.db"
    target.delays["/slow"] = 5.0  # the first attempt is still running when we kill
    first = tickwheel_factory.start(db, extra_env=FAST_LEASES)
    with first.client() as http:
        body = {
            "task_type": "http",
            "payload": {"url": f"{target.url}/slow"},
            "retry_backoff": {"base_seconds": 0.1, "max_seconds": 0.2},
        }
        task_id = http.post("/api/tasks", json=body).json()["task_id"]
        assert wait_for(lambda: len(target.calls_to("/slow")) == 1, timeout=10)
        assert http.get(f"/api/tasks/{task_id}").json()["status"] == "running"
    first.kill()
    target.delays["/slow"] = 0.0
    second = tickwheel_factory.start(db, extra_env=FAST_LEASES)
    with second.client() as http:
        assert wait_for(
            lambda: http.get(f"/api/tasks/{task_id}").json()["status"] == "succeeded", timeout=30
        )
        task = http.get(f"/api/tasks/{task_id}").json()
        history = http.get(f"/api/tasks/{task_id}/history").json()["executions"]
    assert task["attempts"] == 2
    assert [e["outcome"] for e in history] == ["succeeded", "lease_expired"]
    assert [c.attempt for c in target.calls_to("/slow")] == [1, 2]


def test_two_processes_on_one_database_never_fire_a_task_twice(
    tickwheel_factory: type, target: Target, tmp_path: Path
) -> None:
    db = tmp_path / "shared.db"
    one = tickwheel_factory.start(db, extra_env=FAST_LEASES)
    two = tickwheel_factory.start(db, extra_env=FAST_LEASES)
    ids = []
    with one.client() as a, two.client() as b:
        for i in range(150):
            ids.append(_submit(a if i % 2 else b, target, f"/shared/{i}", delay=1.0 + i % 3))
            ids.append(_submit(b if i % 2 else a, target, f"/now/{i}", delay=0))
        assert wait_for(lambda: len(target.calls) >= len(ids), timeout=30)
        assert wait_for(
            lambda: all(a.get(f"/api/tasks/{i}").json()["status"] == "succeeded" for i in ids),
            timeout=20,
        )
        owned = [c.get("/healthz").json()["partitions_owned"] for c in (a, b)]
    counts = Counter(c.task_id for c in target.calls)
    assert set(counts) == set(ids)
    assert max(counts.values()) == 1
    assert sorted(owned) == [0, 16], "one process holds every partition lease"


def test_kill_9_while_a_chain_runs_leaves_no_dependent_stuck(
    tickwheel_factory: type, target: Target, tmp_path: Path
) -> None:
    """A chain of 60 tasks, each after the one before; the process is killed twice while
    it runs. Every task still succeeds, each only after its predecessor was called."""
    db = tmp_path / "chain.db"
    for i in range(60):
        target.delays[f"/step/{i}"] = 0.02
    first = tickwheel_factory.start(db, extra_env=FAST_LEASES)
    ids: list[str] = []
    with first.client() as http:
        for i in range(60):
            after = {"dependencies": ids[-1:]} if ids else {}
            ids.append(_submit(http, target, f"/step/{i}", delay=0.5 if not ids else 0, **after))
    assert wait_for(lambda: len(target.calls) >= 10, timeout=20)
    first.kill()  # mid-chain: one task running or just ended, its dependent not yet told
    second = tickwheel_factory.start(db, extra_env=FAST_LEASES)
    assert wait_for(lambda: len({c.path for c in target.calls}) >= 30, timeout=30)
    second.kill()
    third = tickwheel_factory.start(db, extra_env=FAST_LEASES)
    with third.client() as http:
        assert wait_for(
            lambda: http.get(f"/api/tasks/{ids[-1]}").json()["status"] == "succeeded",
            timeout=60,
        )
        statuses = {http.get(f"/api/tasks/{i}").json()["status"] for i in ids}
    assert statuses == {"succeeded"}
    first_call = {}
    for call in target.calls:
        first_call.setdefault(call.path, call.at)
    starts = [first_call[f"/step/{i}"] for i in range(60)]
    assert starts == sorted(starts)  # never before its predecessor


def test_kill_9_while_keyed_tasks_run_keeps_each_key_in_order(
    tickwheel_factory: type, target: Target, tmp_path: Path
) -> None:
    """4 ordering keys of 25 tasks each; the process is killed twice while they run.
    Every task still succeeds, and each key's tasks were called in due order, a task
    cut off by the kill called again before the next one of its key."""
    db = tmp_path / "keys.db"
    keys, per_key = 4, 25
    for k in range(keys):
        for i in range(per_key):
            target.delays[f"/k{k}/{i}"] = 0.02
    first = tickwheel_factory.start(db, extra_env=FAST_LEASES)
    with first.client() as http:
        ids = [
            _submit(http, target, f"/k{k}/{i}", delay=0.5, ordering_key=f"k{k}")
            for i in range(per_key)
            for k in range(keys)
        ]
    assert wait_for(lambda: len(target.calls) >= 20, timeout=20)
    first.kill()
    second = tickwheel_factory.start(db, extra_env=FAST_LEASES)
    assert wait_for(lambda: len({c.path for c in target.calls}) >= 60, timeout=30)
    second.kill()
    third = tickwheel_factory.start(db, extra_env=FAST_LEASES)
    with third.client() as http:
        assert wait_for(
            lambda: all(http.get(f"/api/tasks/{i}").json()["status"] == "succeeded" for i in ids),
            timeout=60,
        )
    for k in range(keys):
        called = [
            int(c.path.rsplit("/", 1)[1]) for c in target.calls if c.path.startswith(f"/k{k}/")
        ]
        assert called == sorted(called), f"key k{k} ran out of order: {called}"
        assert set(called) == set(range(per_key))


def writer_process_of(tickwheel: Any) -> int:
    """The pid of the SQLite writer's process that `tickwheel up` started."""
    pid = tickwheel.process.pid
    children = Path(f"/proc/{pid}/task/{pid}/children").read_text().split()
    assert len(children) == 1, f"tickwheel up has children {children}, not one writer"
    return int(children[0])


def test_kill_9_of_the_sqlite_writer_process_mid_burst_loses_no_task(
    tickwheel_factory: type, target: Target, tmp_path: Path
) -> None:
    """The writer's process dies between a claim and its answer, or an end and its
    answer: the server starts another, and every accepted task still succeeds."""
    target.delays["/w"] = 0.02
    tickwheel = tickwheel_factory.start(tmp_path / "writer.db", extra_env=FAST_LEASES)
    victim = writer_process_of(tickwheel)
    with tickwheel.client() as http:
        ids = [_submit(http, target, f"/w/{i}", delay=0.5) for i in range(300)]
        assert wait_for(lambda: len(target.calls) >= 30, timeout=20)
        os.kill(victim, signal.SIGKILL)

        def all_succeeded() -> bool:
            page = http.get("/api/tasks", params={"status": "succeeded", "limit": 500})
            return len(page.json()["tasks"]) == len(ids)

        assert wait_for(all_succeeded, timeout=60)
    assert tickwheel.process.poll() is None, "the server died with its writer"
    assert writer_process_of(tickwheel) != victim
    assert {c.task_id for c in target.calls} == set(ids)
