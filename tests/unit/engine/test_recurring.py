"""A recurring workflow's template: stored as JSON, read back as the same workflow."""

from __future__ import annotations

import json
from typing import Any

import pytest

from tickwheel.engine.recurring import nodes_of, template_of
from tickwheel.engine.workflows import WorkflowNode
from tickwheel.errors import InvalidRequest
from tickwheel.models import ScheduleType, TaskOptions
from tickwheel.wire.requests import ScheduleRequest, TaskRequest


def test_a_template_reads_back_as_the_same_workflow() -> None:
    nodes = [
        WorkflowNode("fetch", TaskRequest("http", {"url": "https://example.com/a"})),
        WorkflowNode(
            "store",
            TaskRequest(
                "store",
                [1, {"deep": None}],
                ScheduleRequest(ScheduleType.DELAYED, delay_seconds=2.5),
                TaskOptions("slow", -3, 7, 0.5, 9.0, 30.0),
                dependencies=("fetch",),
                ordering_key="account-9",
            ),
        ),
        WorkflowNode(
            "at",
            TaskRequest("noop", schedule=ScheduleRequest(ScheduleType.DELAYED, due_ms=1_900)),
        ),
    ]
    stored = json.loads(json.dumps(template_of("etl", nodes)))  # as the store keeps it
    assert nodes_of(stored) == ("etl", nodes)


@pytest.mark.parametrize(
    "template",
    [
        None,
        [],
        {"name": "x"},
        {"name": 5, "tasks": []},
        {"name": "x", "tasks": [{"name": "a"}]},
        {"name": "x", "tasks": [{"name": 1, "task_type": "noop"}]},
        {
            "name": "x",
            "tasks": [
                {
                    "name": "a",
                    "task_type": "noop",
                    "payload": None,
                    "schedule": {"type": "delayed", "due_ms": "soon", "delay_seconds": None},
                    "options": {},
                    "dependencies": [],
                    "ordering_key": None,
                }
            ],
        },
    ],
)
def test_anything_else_is_not_a_template(template: Any) -> None:
    with pytest.raises(InvalidRequest) as invalid:
        nodes_of(template)
    assert invalid.value.field == "payload"
