"""Request bodies from submit options, and answers to results or typed errors."""

from __future__ import annotations

import uuid
from datetime import UTC, datetime

import pytest

from tickwheel.api.schemas.tasks import TaskIn
from tickwheel.client import Client, calls, task_body
from tickwheel.errors import (
    Conflict,
    IdempotencyConflict,
    InvalidBatch,
    InvalidRequest,
    Overloaded,
    ServerError,
    StaleFence,
)


def test_task_bodies_are_what_the_api_accepts() -> None:
    bodies = [
        task_body("noop"),
        task_body("noop", {"a": 1}, delay_seconds=5, queue="q", priority=3),
        task_body("noop", due_time=datetime(2030, 1, 1, tzinfo=UTC), retry_backoff=(1, 9)),
        task_body(
            "noop",
            cron="@daily",
            timezone="Europe/Paris",
            jitter_seconds=30,
            misfire_policy="skip",
            overlap_policy="skip",
            idempotency_key="k",
        ),
    ]
    parsed = [TaskIn.model_validate(b) for b in bodies]
    assert [p.schedule.type for p in parsed] == ["immediate", "delayed", "delayed", "cron"]
    assert parsed[2].retry_backoff is not None and parsed[2].retry_backoff.max_seconds == 9
    assert parsed[3].schedule.misfire_policy == "skip"
    with pytest.raises(TypeError, match="delay"):
        task_body("noop", delay=5)  # type: ignore[call-arg]


def test_submissions_carry_a_fresh_task_id_unless_given_a_key() -> None:
    """The client names each task with a UUIDv7 of its own: the id dedupes a retry."""
    one, two = calls.submit(task_body("noop")), calls.submit(task_body("noop"))
    assert one.json["task_id"] != two.json["task_id"]
    assert uuid.UUID(one.json["task_id"]).version == 7
    assert "idempotency_key" not in one.json
    (batched,) = calls.submit_many([task_body("noop")]).json["tasks"]
    assert uuid.UUID(batched["task_id"]).version == 7
    mine = calls.submit(task_body("noop", idempotency_key="mine"))
    assert mine.json["idempotency_key"] == "mine" and "task_id" not in mine.json


def test_a_cron_submission_carries_a_key_not_an_id() -> None:
    """A cron task's id is its schedule's, made by the server: a key dedupes it."""
    cron = calls.submit(task_body("noop", cron="@daily"))
    assert "task_id" not in cron.json
    assert cron.json["idempotency_key"].startswith("tw-client-")


@pytest.mark.parametrize(
    ("status", "body", "kind"),
    [
        (409, {"error": "stale_fence", "message": "m"}, StaleFence),
        (
            409,
            {"error": "idempotency_conflict", "message": "m", "task_id": "t"},
            IdempotencyConflict,
        ),
        (409, {"error": "conflict", "message": "m"}, Conflict),
        (
            413,
            {"error": "invalid_request", "message": "payload: big", "field": "payload"},
            InvalidRequest,
        ),
        (429, {"error": "overloaded", "message": "m"}, Overloaded),
        (500, {"error": "internal", "message": "m"}, ServerError),
    ],
)
def test_error_answers_become_typed_errors(status: int, body: dict[str, str], kind: type) -> None:
    error = calls.error_of(status, body, "3")
    assert type(error) is kind
    if isinstance(error, InvalidRequest):
        assert (error.field, error.reason) == ("payload", "big")


def test_a_batch_answer_names_each_entry() -> None:
    body = {
        "message": "tasks.2.priority: too big",
        "field": "tasks.2.priority",
        "problems": [
            {"field": "tasks.2.priority", "message": "too big"},
            {"field": "tasks.5", "message": "not an object"},
        ],
    }
    error = calls.error_of(422, body, None)
    assert isinstance(error, InvalidBatch)
    assert [(i, p.field, p.reason) for i, p in error.problems] == [
        (2, "priority", "too big"),
        (5, "body", "not an object"),
    ]


def test_an_answer_that_is_not_json_is_a_server_error() -> None:
    with pytest.raises(ServerError) as error:
        calls.answer(calls.health(), 502, b"<html>bad gateway</html>", None)
    assert error.value.status == 502
    with pytest.raises(ServerError):
        calls.answer(calls.health(), 200, b'{"unexpected": 1}', None)


def test_a_server_error_names_its_cause() -> None:
    body = {"error": "storage_full", "message": "the SQLite store's disk is full"}
    error = calls.error_of(503, body, "5")
    assert isinstance(error, ServerError)
    assert (error.status, error.code) == (503, "storage_full")
    assert calls.error_of(502, {}, None).code is None  # type: ignore[attr-defined]


def test_reading_calls_send_only_the_filters_given() -> None:
    listed = calls.list_tasks(("failed",), None, 20, None, queue="emails", q=None)
    assert (listed.path, listed.params) == (
        "/api/tasks",
        {"limit": 20, "status": ["failed"], "queue": "emails"},
    )
    schedules = calls.list_schedules(("paused",), 5, "tok")
    assert schedules.path == "/api/schedules"
    assert schedules.params == {"limit": 5, "status": ["paused"], "next_token": "tok"}
    assert calls.list_workflows(20, None).params == {"limit": 20}
    assert calls.history("t1", 3, None).params == {"limit": 3}
    assert (calls.nodes().path, calls.stats().path, calls.metrics().path) == (
        "/api/nodes",
        "/api/stats",
        "/metrics",
    )
    assert calls.metrics().parse(b"# TYPE x counter\n") == "# TYPE x counter\n"


@pytest.mark.parametrize(
    "url", ["http://127.0.0.1:8799x", "127.0.0.1:8700", "ftp://host", "http://", "http://h:70000"]
)
def test_a_url_that_names_no_server_is_refused_at_once(url: str) -> None:
    with pytest.raises(ValueError, match="is not a server URL"):
        Client(url)
    assert Client("https://host/prefix/").url == "https://host/prefix"
