"""Bad input gets a 4xx naming the field at fault, and nothing is stored."""

from __future__ import annotations

import json
from typing import Any

import httpx
import pytest

from tickwheel.errors import InvalidRequest
from tickwheel.node import Node

BAD_REQUESTS: list[tuple[str, dict[str, Any], str]] = [
    (
        "invalid cron expression",
        {"task_type": "noop", "schedule": {"type": "cron", "cron_expression": "61 * * * *"}},
        "schedule.cron_expression",
    ),
    (
        "six-field cron",
        {"task_type": "noop", "schedule": {"type": "cron", "cron_expression": "0 0 * * * *"}},
        "schedule.cron_expression",
    ),
    (
        "unknown time zone",
        {
            "task_type": "noop",
            "schedule": {"type": "cron", "cron_expression": "@daily", "timezone": "Mars/Olympus"},
        },
        "schedule.timezone",
    ),
    (
        "unparseable due_time",
        {"task_type": "noop", "schedule": {"type": "delayed", "due_time": "tomorrow at noon"}},
        "schedule.due_time",
    ),
    (
        "due_time without offset",
        {"task_type": "noop", "schedule": {"type": "delayed", "due_time": "2030-01-01T00:00:00"}},
        "schedule.due_time",
    ),
    (
        "negative delay",
        {"task_type": "noop", "schedule": {"type": "delayed", "delay_seconds": -5}},
        "schedule.delay_seconds",
    ),
    (
        "unknown schedule type",
        {"task_type": "noop", "schedule": {"type": "sometimes"}},
        "schedule.type",
    ),
    ("missing task_type", {"payload": {}}, "task_type"),
    ("task_type with spaces", {"task_type": "rm -rf"}, "task_type"),
    ("priority out of range", {"task_type": "noop", "priority": 1000}, "priority"),
    ("negative max_retries", {"task_type": "noop", "max_retries": -1}, "max_retries"),
    (
        "backoff cap below base",
        {"task_type": "noop", "retry_backoff": {"base_seconds": 10, "max_seconds": 1}},
        "retry_backoff",
    ),
    ("http task without url", {"task_type": "http", "payload": {}}, "payload.url"),
    (
        "http task with a file url",
        {"task_type": "http", "payload": {"url": "file:///etc/passwd"}},
        "payload.url",
    ),
    ("unknown field", {"task_type": "noop", "colour": "blue"}, "colour"),
    ("the engine's task type", {"task_type": "tickwheel.workflow", "payload": {}}, "task_type"),
    ("the engine's queue", {"task_type": "noop", "queue": "tickwheel"}, "queue"),
    ("empty ordering_key", {"task_type": "noop", "ordering_key": ""}, "ordering_key"),
    ("ordering_key too long", {"task_type": "noop", "ordering_key": "k" * 257}, "ordering_key"),
    (
        "ordering_key on a cron task",
        {
            "task_type": "noop",
            "ordering_key": "k",
            "schedule": {"type": "cron", "cron_expression": "@daily"},
        },
        "ordering_key",
    ),
    ("empty limit_key", {"task_type": "noop", "limit_key": ""}, "limit_key"),
    ("limit_key too long", {"task_type": "noop", "limit_key": "k" * 201}, "limit_key"),
    ("limit_key not a string", {"task_type": "noop", "limit_key": 5}, "limit_key"),
    (
        "limit_key on a cron task",
        {
            "task_type": "noop",
            "limit_key": "tenant-1",
            "schedule": {"type": "cron", "cron_expression": "@daily"},
        },
        "limit_key",
    ),
]


def _nested(depth: int) -> Any:
    value: Any = []
    for _ in range(depth - 1):
        value = [value]
    return value


async def _stored(api: httpx.AsyncClient) -> int:
    return len((await api.get("/api/tasks", params={"limit": 500})).json()["tasks"])


@pytest.mark.parametrize(
    ("case", "body", "field"), BAD_REQUESTS, ids=[c for c, _, _ in BAD_REQUESTS]
)
async def test_bad_submission_is_4xx_naming_the_field_and_stores_nothing(
    api: httpx.AsyncClient, case: str, body: dict[str, Any], field: str
) -> None:
    before = await _stored(api)
    response = await api.post("/api/tasks", json=body)
    assert 400 <= response.status_code < 500, response.text
    answer = response.json()
    assert answer["field"] == field, answer
    assert field.split(".")[-1] in answer["message"]
    assert await _stored(api) == before


@pytest.mark.parametrize("limit_key", ["", "k" * 201, 5, ["k"]])
async def test_a_bad_limit_key_in_a_batch_or_workflow_is_422_naming_it(
    api: httpx.AsyncClient, limit_key: Any
) -> None:
    good = {"task_type": "noop", "limit_key": "k" * 200}
    bad = {"task_type": "noop", "limit_key": limit_key}
    batch = await api.post("/api/tasks/batch", json={"tasks": [good, bad]})
    assert batch.status_code == 422, batch.text
    assert batch.json()["field"] == "tasks.1.limit_key"
    workflow = {"tasks": [{**good, "name": "a"}, {**bad, "name": "b"}]}
    answer = await api.post("/api/workflows", json=workflow)
    assert answer.status_code == 422, answer.text
    assert answer.json()["field"] == "tasks.1.limit_key"
    assert await _stored(api) == 0


async def test_the_node_checks_a_limit_key_too(node: Node) -> None:
    for bad in ("", "k" * 201):
        with pytest.raises(InvalidRequest) as invalid:
            await node.submit("noop", limit_key=bad)
        assert invalid.value.field == "limit_key"
    with pytest.raises(InvalidRequest) as cron:
        await node.submit("noop", cron="@daily", limit_key="tenant-1")
    assert cron.value.field == "limit_key"
    with pytest.raises(InvalidRequest) as wrong_type:
        await node.submit("noop", limit_key=5)  # type: ignore[typeddict-item]
    assert wrong_type.value.field == "limit_key"


async def test_oversized_payload_is_413_naming_payload(api: httpx.AsyncClient, node: Node) -> None:
    limit = node.settings.max_payload_bytes
    response = await api.post("/api/tasks", json={"task_type": "noop", "payload": "x" * limit})
    assert response.status_code == 413
    assert response.json()["field"] == "payload"
    huge = await api.post(
        "/api/tasks",
        content=b'{"task_type": "noop", "payload": "' + b"x" * (limit * 2) + b'"}',
        headers={"content-type": "application/json"},
    )
    assert huge.status_code == 413
    assert huge.json()["field"] == "payload"
    assert await _stored(api) == 0


async def test_payload_just_under_the_limit_is_accepted(api: httpx.AsyncClient, node: Node) -> None:
    payload = "x" * (node.settings.max_payload_bytes - 1000)
    response = await api.post("/api/tasks", json={"task_type": "noop", "payload": payload})
    assert response.status_code == 201


async def test_not_json_is_422(api: httpx.AsyncClient) -> None:
    response = await api.post(
        "/api/tasks", content=b"{not json", headers={"content-type": "application/json"}
    )
    assert response.status_code == 422
    assert await _stored(api) == 0


@pytest.mark.parametrize("path", ["/api/tasks/nope", "/api/tasks/nope/history"])
async def test_unknown_id_is_404(api: httpx.AsyncClient, path: str) -> None:
    response = await api.get(path)
    assert response.status_code == 404
    assert response.json()["error"] == "not_found"
    unknown_route = await api.get("/api/nothing-here")
    assert unknown_route.json()["error"] == "unknown_route"
    assert (await api.delete("/api/tasks/nope")).status_code == 404


async def test_forged_page_token_is_422_naming_it(api: httpx.AsyncClient) -> None:
    response = await api.get("/api/tasks", params={"next_token": "garbage!"})
    assert response.status_code == 422
    assert response.json()["field"] == "next_token"


@pytest.mark.parametrize("limit", [0, 501, -1])
async def test_page_size_is_bounded(api: httpx.AsyncClient, limit: int) -> None:
    response = await api.get("/api/tasks", params={"limit": limit})
    assert response.status_code == 422
    assert response.json()["field"] == "limit"


async def test_oversized_chunked_body_is_413_naming_payload(
    api: httpx.AsyncClient, node: Node
) -> None:
    chunk = b"x" * 65536

    async def body() -> Any:
        yield b'{"task_type": "noop", "payload": "'
        for _ in range(node.settings.max_payload_bytes // len(chunk) + 4):
            yield chunk
        yield b'"}'

    response = await api.post(
        "/api/tasks", content=body(), headers={"content-type": "application/json"}
    )
    assert response.status_code == 413
    assert response.json()["field"] == "payload"
    assert await _stored(api) == 0


@pytest.mark.parametrize(
    ("payload", "reason"),
    [
        ("\ud800", "Unicode"),
        (_nested(100), "deeper"),
    ],
    ids=["lone-surrogate", "too-deep"],
)
async def test_payloads_that_could_not_be_read_back_are_refused(
    api: httpx.AsyncClient, payload: Any, reason: str
) -> None:
    body = json.dumps({"task_type": "noop", "payload": payload})  # escapes the surrogate
    response = await api.post(
        "/api/tasks", content=body, headers={"content-type": "application/json"}
    )
    assert response.status_code == 422
    assert response.json()["field"] == "payload"
    assert reason in response.json()["message"]
    assert await _stored(api) == 0


@pytest.mark.parametrize("due", ["0001-01-01T00:00:00+14:00", "9999-12-31T23:59:59-12:00"])
async def test_due_times_out_of_range_are_refused(api: httpx.AsyncClient, due: str) -> None:
    body = {"task_type": "noop", "schedule": {"type": "delayed", "due_time": due}}
    response = await api.post("/api/tasks", json=body)
    assert response.status_code == 422
    assert response.json()["field"] == "schedule.due_time"
    assert await _stored(api) == 0


async def test_utf8_payload_is_measured_in_utf8_bytes(api: httpx.AsyncClient, node: Node) -> None:
    text = "é" * (node.settings.max_payload_bytes // 2 - 100)  # 2 bytes each in UTF-8
    response = await api.post("/api/tasks", json={"task_type": "noop", "payload": text})
    assert response.status_code == 201
