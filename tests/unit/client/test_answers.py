"""The client's answers and the API's: the same fields, so whatever the API answers, the
client reads."""

from __future__ import annotations

from datetime import UTC, datetime

import msgspec
import pytest
from pydantic import BaseModel

from tickwheel.api import schemas
from tickwheel.client import calls
from tickwheel.wire import answers

ANSWERS = [
    kind
    for kind in vars(answers).values()
    if isinstance(kind, type) and issubclass(kind, answers.Answer) and kind is not answers.Answer
]


def test_every_answer_the_clients_return_is_stated_here() -> None:
    assert {kind.__name__ for kind in ANSWERS} >= {
        "SubmittedOut", "BatchOut", "TaskOut", "TaskPage", "HistoryPage", "QueuesOut",
        "HealthOut", "ClaimOut", "LeaseOut", "AttemptEndOut", "WorkflowOut", "RedriveOut",
        "CancelledOut", "WorkflowCancelledOut",
    }  # fmt: skip


@pytest.mark.parametrize("kind", ANSWERS, ids=lambda kind: kind.__name__)
def test_each_answer_has_the_fields_the_api_answers(kind: type[msgspec.Struct]) -> None:
    api: type[BaseModel] = getattr(schemas, kind.__name__)
    mine = {f.name: f.required for f in msgspec.structs.fields(kind)}
    theirs = {name: f.is_required() for name, f in api.model_fields.items()}
    assert mine == theirs


def test_an_api_answer_decodes_to_the_clients() -> None:
    now = datetime(2030, 1, 2, 3, 4, 5, tzinfo=UTC)
    sent = schemas.BatchOut(
        tasks=[schemas.SubmittedOut(task_id="t1", status="pending", due_time=now)]
    )
    (read,) = calls.answer(calls.submit_many([]), 201, sent.model_dump_json().encode(), None)
    assert (read.task_id, read.status, read.due_time, read.duplicate) == (
        "t1",
        "pending",
        now,
        False,
    )


def test_the_clients_answers_carry_warnings_and_waiting_on() -> None:
    now = datetime(2030, 1, 2, 3, 4, 5, tzinfo=UTC)
    sent = schemas.BatchOut(
        tasks=[schemas.SubmittedOut(task_id="t1", status="blocked", due_time=now, warnings=["w"])],
        warnings=["w"],
    )
    (read,) = calls.answer(calls.submit_many([]), 201, sent.model_dump_json().encode(), None)
    assert (read.status, read.warnings) == ("blocked", ["w"])

    wait = schemas.WaitOut(
        reason="predecessors",
        message="waits on t0",
        tasks=[schemas.PredecessorOut(task_id="t0", status="running")],
    )
    task = schemas.TaskOut(
        task_id="t1",
        task_type="noop",
        status="blocked",
        payload=None,
        schedule=schemas.ScheduleOut(type="immediate"),
        queue="default",
        priority=0,
        max_retries=3,
        retry_backoff=schemas.RetryBackoffOut(base_seconds=1, max_seconds=300),
        timeout_seconds=None,
        idempotency_key=None,
        attempts=0,
        fence=0,
        due_time=now,
        created_at=now,
        triggered_at=None,
        started_at=None,
        completed_at=None,
        lease_expires_at=None,
        worker_id=None,
        last_error=None,
        waiting_on=[wait],
    )
    got = calls.answer(calls.get("t1"), 200, task.model_dump_json().encode(), None)
    assert got.waiting_on is not None
    (reason,) = got.waiting_on
    assert (reason.reason, reason.tasks) == (
        "predecessors",
        [answers.PredecessorOut("t0", "running")],
    )
