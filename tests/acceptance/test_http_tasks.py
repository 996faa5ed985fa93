"""The real `tickwheel up`, driven over HTTP, calling a real HTTP target."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

from harness import Target, wait_for


def _due_in(seconds: float) -> str:
    return (datetime.now(UTC) + timedelta(seconds=seconds)).isoformat()


def _http_task(target: Target, path: str, **extra: object) -> dict[str, object]:
    return {"task_type": "http", "payload": {"url": f"{target.url}{path}"}, **extra}


def test_burst_of_300_http_tasks_each_fires_once_and_never_early(
    tickwheel_factory: type, target: Target
) -> None:
    tw = tickwheel_factory.start()
    due = datetime.now(UTC).replace(microsecond=0) + timedelta(seconds=3)
    with tw.client() as http:
        ids = [
            http.post(
                "/api/tasks",
                json=_http_task(
                    target,
                    f"/burst/{i}",
                    schedule={"type": "delayed", "due_time": due.isoformat()},
                ),
            ).json()["task_id"]
            for i in range(300)
        ]
        assert wait_for(lambda: len(target.calls) >= 300, timeout=30)
        assert wait_for(
            lambda: all(
                http.get(f"/api/tasks/{i}").json()["status"] == "succeeded" for i in ids[-5:]
            ),
            timeout=10,
        )
        tasks = [http.get(f"/api/tasks/{i}").json() for i in ids]
    assert sorted(c.task_id for c in target.calls) == sorted(ids)  # each exactly once
    assert min(c.at for c in target.calls) >= due.timestamp()  # none early
    # Late from its due time, or from its acceptance if one was accepted after it (300
    # single submissions can outlast the 3 s on a loaded machine).
    lateness = sorted(
        (
            datetime.fromisoformat(t["triggered_at"])
            - max(due, datetime.fromisoformat(t["created_at"]))
        ).total_seconds()
        for t in tasks
    )
    assert lateness[0] >= -0.001  # created_at and triggered_at are in whole milliseconds
    assert lateness[-1] < 1.0, "the product promises triggering within a second"
    assert all(t["status"] == "succeeded" and t["attempts"] == 1 for t in tasks)


def test_task_that_fails_twice_then_succeeds_has_three_attempts(
    tickwheel_factory: type, target: Target
) -> None:
    target.responses["/flaky"] = lambda n: 503 if n <= 2 else 200
    tw = tickwheel_factory.start()
    with tw.client() as http:
        body = _http_task(target, "/flaky", retry_backoff={"base_seconds": 0.1, "max_seconds": 0.2})
        task_id = http.post("/api/tasks", json=body).json()["task_id"]
        assert wait_for(
            lambda: http.get(f"/api/tasks/{task_id}").json()["status"] == "succeeded", 20
        )
        task = http.get(f"/api/tasks/{task_id}").json()
        history = http.get(f"/api/tasks/{task_id}/history").json()
    assert task["attempts"] == 3
    assert [e["outcome"] for e in history["executions"]] == ["succeeded", "failed", "failed"]
    assert [e["attempt"] for e in history["executions"]] == [3, 2, 1]
    calls = target.calls_to("/flaky")
    assert [c.attempt for c in calls] == [1, 2, 3]
    assert {c.idempotency_key for c in calls} == {task_id}  # stable across attempts


def test_task_that_keeps_failing_ends_failed_with_its_error(
    tickwheel_factory: type, target: Target
) -> None:
    target.responses["/down"] = lambda n: 500
    tw = tickwheel_factory.start()
    with tw.client() as http:
        body = _http_task(
            target, "/down", max_retries=2, retry_backoff={"base_seconds": 0.05, "max_seconds": 0.1}
        )
        task_id = http.post("/api/tasks", json=body).json()["task_id"]
        assert wait_for(lambda: http.get(f"/api/tasks/{task_id}").json()["status"] == "failed", 20)
        task = http.get(f"/api/tasks/{task_id}").json()
    assert task["attempts"] == 3
    assert "HTTP 500" in task["last_error"]
    assert len(target.calls_to("/down")) == 3


def test_client_error_fails_at_once_without_retry(tickwheel_factory: type, target: Target) -> None:
    target.responses["/gone"] = lambda n: 404
    tw = tickwheel_factory.start()
    with tw.client() as http:
        task_id = http.post("/api/tasks", json=_http_task(target, "/gone")).json()["task_id"]
        assert wait_for(lambda: http.get(f"/api/tasks/{task_id}").json()["status"] == "failed", 10)
        assert http.get(f"/api/tasks/{task_id}").json()["attempts"] == 1


def test_cancelled_task_never_fires(tickwheel_factory: type, target: Target) -> None:
    tw = tickwheel_factory.start()
    with tw.client() as http:
        kept = http.post(
            "/api/tasks",
            json=_http_task(target, "/kept", schedule={"type": "delayed", "delay_seconds": 1.5}),
        ).json()["task_id"]
        dropped = http.post(
            "/api/tasks",
            json=_http_task(target, "/dropped", schedule={"type": "delayed", "delay_seconds": 1}),
        ).json()["task_id"]
        answer = http.delete(f"/api/tasks/{dropped}")
        assert answer.status_code == 200
        assert answer.json() == {"ok": True, "cancelled_instances": 1}
        assert wait_for(lambda: http.get(f"/api/tasks/{kept}").json()["status"] == "succeeded", 10)
        assert http.get(f"/api/tasks/{dropped}").json()["status"] == "cancelled"
        again = http.delete(f"/api/tasks/{dropped}")  # a retried cancel is safe
        assert again.json() == {"ok": True, "cancelled_instances": 0}
        done = http.delete(f"/api/tasks/{kept}")
        assert done.status_code == 409  # it succeeded: too late to cancel
    assert target.calls_to("/dropped") == []


def test_denied_targets_are_refused_at_submission_and_before_a_call(
    tickwheel_factory: type, target: Target
) -> None:
    tw = tickwheel_factory.start(extra_env={"TICKWHEEL_HTTP_DENY": "127.0.0.0/8,::1"})
    with tw.client() as http:
        literal = http.post("/api/tasks", json=_http_task(target, "/denied"))
        assert literal.status_code == 422
        assert literal.json()["field"] == "payload.url"
        # A name is judged by what it resolves to, before the call: it fails for good.
        port = target.url.rsplit(":", 1)[1]
        body = {"task_type": "http", "payload": {"url": f"http://localhost:{port}/named"}}
        task_id = http.post("/api/tasks", json=body).json()["task_id"]
        assert wait_for(lambda: http.get(f"/api/tasks/{task_id}").json()["status"] == "failed", 10)
        assert "deny list" in http.get(f"/api/tasks/{task_id}").json()["last_error"]
    assert target.calls == []
