"""The production API against a live `tickwheel up`, through the Python client: batches,
admission control, dead letters and operations, remote workers, and limits."""

from __future__ import annotations

import time

import httpx
import pytest
from harness import Tickwheel

from tickwheel import Client, InvalidBatch, InvalidRequest, Overloaded, StaleFence
from tickwheel.client import Retries, task_body
from tickwheel.core.retry import RetryPolicy

NO_WORKER = {"TICKWHEEL_WORKER": "false", "TICKWHEEL_LEASE_SECONDS": "2"}


def _drain(client: Client, worker_id: str, count: int) -> list[tuple[str, int]]:
    """Claim `count` tasks over the worker protocol: (task_id, fence) each."""
    claimed: list[tuple[str, int]] = []
    while len(claimed) < count:
        wanted = min(256, count - len(claimed))
        tasks = client.claim(worker_id, max_tasks=wanted, wait_seconds=5)
        claimed += [(t.task_id, t.fence) for t in tasks]
    return claimed


def test_batches_dead_letters_and_operations(tickwheel_factory: type) -> None:
    tw: Tickwheel = tickwheel_factory.start(extra_env=NO_WORKER)
    with Client(tw.url) as client:
        submitted = client.submit_many([task_body("resize", {"i": i}) for i in range(300)])
        assert len({s.task_id for s in submitted}) == 300
        with pytest.raises(InvalidBatch) as invalid:
            client.submit_many([task_body("resize"), task_body("resize", queue="no spaces")])
        assert [(i, p.field) for i, p in invalid.value.problems] == [(1, "queue")]
        assert sum(1 for _ in client.iter_tasks(page_size=100)) == 300  # nothing half-stored

        claimed = _drain(client, "w1", 300)
        for task_id, fence in claimed[:3]:
            assert client.fail(task_id, fence, "out of paper", retryable=False).status == "failed"
        for task_id, fence in claimed[3:]:
            client.complete(task_id, fence)
        dead = [t.task_id for t in client.iter_tasks("failed")]
        assert sorted(dead) == sorted(t for t, _ in claimed[:3])
        assert all(t.last_error == "out of paper" for t in client.iter_tasks("failed"))

        redriven = client.redrive(dead)
        assert sorted(redriven.redriven) == sorted(dead)
        again = _drain(client, "w2", 3)
        assert {t for t, _ in again} == set(dead)
        assert all(client.get(t).attempts == 1 for t in dead)  # attempts were reset
        for task_id, fence in again:
            client.complete(task_id, fence)

        later = client.submit("resize", delay_seconds=3600)
        assert client.set_priority(later.task_id, 90).priority == 90
        hourly = client.submit("resize", cron="@hourly")
        assert client.pause(hourly.task_id).schedule.schedule_status == "paused"
        assert client.resume(hourly.task_id).schedule.schedule_status == "active"


def test_a_stale_worker_is_fenced_out(tickwheel_factory: type) -> None:
    """A worker paused past its lease: the task goes to another worker, and the first
    worker's heartbeat and result are refused."""
    tw: Tickwheel = tickwheel_factory.start(extra_env=NO_WORKER)
    with Client(tw.url) as client:
        task = client.submit("resize", max_retries=3)
        ((task_id, stale),) = _drain(client, "paused-worker", 1)
        ((_, fresh),) = _drain(client, "second-worker", 1)  # after the 2 s lease ran out
        assert fresh > stale
        with pytest.raises(StaleFence):
            client.complete(task_id, stale)
        with pytest.raises(StaleFence):
            client.heartbeat(task_id, stale)
        assert client.complete(task_id, fresh).status == "succeeded"
        assert client.get(task.task_id).worker_id == "second-worker"


def test_overload_answers_429_while_reads_keep_working(tickwheel_factory: type) -> None:
    tw: Tickwheel = tickwheel_factory.start(
        extra_env={**NO_WORKER, "TICKWHEEL_MAX_READY_DEPTH": "20"}
    )
    impatient = Retries(RetryPolicy(max_retries=0))
    with Client(tw.url, retries=impatient) as client:
        client.submit_many([task_body("resize") for _ in range(30)])
        while client.queues().backlog < 30:
            time.sleep(0.05)
        with pytest.raises(Overloaded) as overloaded:
            client.submit("resize")
        assert overloaded.value.retry_after_seconds >= 1
        queues = client.queues()
        assert (queues.admitting, queues.depth) == (False, {"default": 30})
        for task_id, fence in _drain(client, "w", 30):
            client.complete(task_id, fence)
        while not client.queues().admitting:
            time.sleep(0.05)
        assert client.submit("resize").status == "pending"


def test_limits_on_what_a_client_controls(tickwheel_factory: type) -> None:
    tw: Tickwheel = tickwheel_factory.start(extra_env={"TICKWHEEL_MAX_PAYLOAD_BYTES": "2000"})
    with Client(tw.url) as client:
        cases = [
            ("payload", {"payload": "x" * 3000}),
            ("schedule.delay_seconds", {"schedule": {"type": "delayed", "delay_seconds": -1}}),
            (
                "schedule.due_time",
                {"schedule": {"type": "delayed", "due_time": "9999-01-01T00:00:00Z"}},
            ),
            (
                "schedule.cron_expression",
                {"schedule": {"type": "cron", "cron_expression": "0 0 31 2 *"}},
            ),
            ("task_type", {"task_type": "t" * 129}),
            ("priority", {"priority": 101}),
        ]
        for field, change in cases:
            with pytest.raises(InvalidRequest) as invalid:
                client.submit_many([{**task_body("noop"), **change}])
            assert field in invalid.value.field, field
        with pytest.raises(InvalidRequest) as too_many:
            client.submit_many([task_body("noop")] * 10_001)
        assert too_many.value.field == "tasks"
        with pytest.raises(InvalidRequest) as page:
            client.list_tasks(limit=501)
        assert page.value.field == "limit"
        assert client.list_tasks().tasks == []  # nothing was stored
    with httpx.Client(base_url=tw.url) as http:
        huge = http.post("/api/tasks", content=b"{" + b" " * 2_000_000 + b"}")
        assert huge.status_code == 413
