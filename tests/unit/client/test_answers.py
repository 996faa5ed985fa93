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
