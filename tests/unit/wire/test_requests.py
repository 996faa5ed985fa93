"""One translation of options: a task submitted in Python to the embedded node, and the
same task sent by the client and validated by the API, make the same engine request."""

from __future__ import annotations

from dataclasses import replace
from datetime import UTC, datetime
from typing import Any

import pytest

from tickwheel.api.schemas import TaskIn
from tickwheel.core.cron import CronSpec, MisfirePolicy, OverlapPolicy
from tickwheel.errors import InvalidRequest
from tickwheel.models import ScheduleType, SubmitOptions, TaskOptions
from tickwheel.wire.bodies import task_body
from tickwheel.wire.requests import (
    ScheduleRequest,
    TaskRequest,
    request_of,
    schedule_of,
    task_request,
    task_requests,
)

TYPED = TaskOptions(max_retries=7, timeout_seconds=30.0)


def type_options(task_type: str) -> TaskOptions:
    return TYPED if task_type == "typed" else TaskOptions()


CASES: list[SubmitOptions] = [
    {},
    {"delay_seconds": 5, "queue": "q", "priority": 3},
    {"due_time": datetime(2030, 1, 1, tzinfo=UTC), "retry_backoff": (1.0, 9.0)},
    {
        "cron": "@daily",
        "timezone": "Europe/Paris",
        "jitter_seconds": 30,
        "misfire_policy": "skip",
        "overlap_policy": "skip",
        "idempotency_key": "k",
    },
    {"dependencies": ["a", "b"], "ordering_key": "o", "max_retries": 2, "timeout_seconds": 1.5},
]


@pytest.mark.parametrize("options", CASES)
@pytest.mark.parametrize("task_type", ["noop", "typed"])
def test_the_node_and_the_api_read_options_alike(task_type: str, options: SubmitOptions) -> None:
    embedded = request_of(task_type, {"n": 1}, options, type_options)
    sent = TaskIn.model_validate(task_body(task_type, {"n": 1}, **options))
    assert task_request(sent, type_options) == embedded


def test_options_a_task_leaves_out_are_its_types() -> None:
    request = request_of("typed", None, {"priority": 5}, type_options)
    assert request.options == replace(TYPED, priority=5)
    assert request_of("typed", None, {}, type_options).options is TYPED


def test_what_each_schedule_option_asks_for() -> None:
    due = datetime(2030, 1, 1, tzinfo=UTC)
    assert request_of("t", None, {}, type_options) == TaskRequest("t")
    assert request_of("t", None, {"due_time": due}, type_options).schedule == ScheduleRequest(
        ScheduleType.DELAYED, due_ms=1893456000000
    )
    assert schedule_of({"delay_seconds": 2.5}) == ScheduleRequest(
        ScheduleType.DELAYED, delay_seconds=2.5
    )
    assert schedule_of({"cron": "0 3 * * *", "overlap_policy": "skip"}) == ScheduleRequest(
        ScheduleType.CRON,
        cron=CronSpec("0 3 * * *"),
        misfire=MisfirePolicy.RUN_ONCE,
        overlap=OverlapPolicy.SKIP,
    )


@pytest.mark.parametrize(
    ("options", "field"),
    [
        ({"due_time": datetime(2030, 1, 1)}, "due_time"),  # naive
        ({"cron": "61 * * * *"}, "cron"),
        ({"cron": "@daily", "timezone": "Mars/Olympus"}, "timezone"),
        ({"cron": "@daily", "jitter_seconds": -5}, "jitter_seconds"),
        ({"cron": "@daily", "misfire_policy": "sometimes"}, "misfire_policy"),
        ({"priority": "high"}, "priority"),
        ({"cron": 5}, "cron"),
        ({"retry_backoff": ("a", 1)}, "retry_backoff"),
        ({"queue": "tickwheel"}, "queue"),
    ],
)
def test_errors_name_the_option_at_fault(options: dict[str, Any], field: str) -> None:
    with pytest.raises(InvalidRequest) as invalid:
        request_of("noop", None, options, type_options)  # type: ignore[arg-type]
    assert invalid.value.field == field


def test_the_engines_own_type_is_refused() -> None:
    with pytest.raises(InvalidRequest) as invalid:
        request_of("tickwheel.workflow", None, {}, type_options)
    assert invalid.value.field == "task_type"


def test_a_batch_works_out_a_types_options_once() -> None:
    asked: list[str] = []

    def counted(task_type: str) -> TaskOptions:
        asked.append(task_type)
        return type_options(task_type)

    bodies = [TaskIn.model_validate(task_body("typed", i)) for i in range(5)]
    requests = task_requests(bodies, counted)
    assert asked == ["typed"] and [r.payload for r in requests] == list(range(5))
