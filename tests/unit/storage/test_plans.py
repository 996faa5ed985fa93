"""The rules of the stores' writes (`storage/plans/`), without a database: each plan is
driven by a script that answers its steps, and what it asked for is checked."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import replace
from typing import Any

import pytest

from tickwheel.errors import IdempotencyConflict, InvalidRequest, RejectedItems
from tickwheel.models import (
    Finish,
    Idempotency,
    NewTask,
    Outcome,
    ScheduleRecord,
    ScheduleType,
    Status,
    TaskOptions,
    WorkflowRecord,
)
from tickwheel.storage import rows as convert
from tickwheel.storage.plans import attempts, inserts, propagation, steps
from tickwheel.storage.plans.steps import Plan, Step, T
from tickwheel.storage.postgres.steps import PostgresSteps
from tickwheel.storage.records import Advance, Fence, Held, Propagated
from tickwheel.storage.sqlite.steps import SqliteSteps

T0 = 1_700_000_000_000


class Script:
    """Answers each step by its `op` from `answers` (a value, or a function of the
    step), None where it has none, and keeps the steps asked for."""

    def __init__(self, **answers: Any) -> None:
        self.answers = answers
        self.asked: list[Step] = []
        self._seq = 100
        self._mark = 1000

    def run(self, plan: Plan[T]) -> T:
        return steps.run(plan, self.answer)

    def answer(self, step: Step) -> Any:
        self.asked.append(step)
        if step.op in self.answers:
            found = self.answers[step.op]
            return found(step) if callable(found) else found
        if isinstance(step, steps.NextSeqs):
            self._seq += step.count
            return list(range(self._seq - step.count + 1, self._seq + 1))
        if isinstance(step, steps.TakeMarks):
            self._mark += step.count
            return range(self._mark - step.count + 1, self._mark + 1)
        return None

    def ops(self) -> list[str]:
        return [s.op for s in self.asked]

    def only(self, kind: type[T]) -> list[T]:
        return [s for s in self.asked if isinstance(s, kind)]


def task(name: str, **changes: Any) -> NewTask:
    made = NewTask(name, 0, "noop", None, ScheduleType.IMMEDIATE, T0, T0 - 1, TaskOptions())
    return replace(made, **changes)


# Where a task row's status is among `task_params` (rows are [seq, mark, *task_params]).
STATUS_COLUMN = convert.task_params(task("probe"), Status.WAITING).index("waiting")


def row(**columns: Any) -> Mapping[str, Any]:
    return columns


# -- inserts -----------------------------------------------------------------------


@pytest.mark.parametrize("size", [1, 500])
def test_a_batch_insert_costs_the_same_statements_whatever_its_size(size: int) -> None:
    script = Script()

    held = script.run(inserts.insert_tasks([task(f"t{i}") for i in range(size)]))

    assert script.ops() == ["lock_marks", "next_seqs", "take_marks", "insert_tasks"]
    (rows,) = script.only(steps.InsertTasks)
    assert [r[:2] for r in rows.rows] == [[101 + i, 1001 + i] for i in range(size)]
    assert held == [Held(101 + i, f"t{i}", status=Status.PENDING) for i in range(size)]


def test_a_task_its_submitter_pushes_itself_takes_no_mark() -> None:
    script = Script()

    script.run(inserts.insert_tasks([task("pushed", direct=True), task("loaded")]))

    assert script.only(steps.TakeMarks) == [steps.TakeMarks(1)]
    (rows,) = script.only(steps.InsertTasks)
    assert [r[1] for r in rows.rows] == [0, 1001]


def test_a_repeated_submission_is_answered_with_the_first_task() -> None:
    script = Script(stored_requests={"a": "h"}, seqs_of={"a": 7})

    held = script.run(
        inserts.insert_tasks([task("a", request_hash="h"), task("b", request_hash="h")])
    )

    assert script.only(steps.StoredRequests) == [steps.StoredRequests(["a", "b"])]
    (rows,) = script.only(steps.InsertTasks)
    assert [r[2] for r in rows.rows] == ["b"]  # seq, mark, then the task id
    assert held == [Held(7, "a", repeat=True), Held(101, "b", status=Status.PENDING)]


def test_a_key_held_for_another_request_writes_nothing() -> None:
    keyed = task("a", idempotency=Idempotency("k", "mine", T0 - 60_000))
    script = Script(take_keys=set(), key_holders={("noop", "k"): ("older", "theirs")})

    with pytest.raises(RejectedItems) as rejected:
        script.run(inserts.insert_tasks([keyed]))

    assert isinstance(rejected.value.errors[0], IdempotencyConflict)
    assert script.ops() == ["lock_marks", "take_keys", "key_holders"]


def test_a_dependent_of_a_running_task_starts_blocked_and_watches_it() -> None:
    script = Script(statuses_of={"p": (5, Status.RUNNING), "done": (6, Status.SUCCEEDED)})

    held = script.run(
        inserts.insert_tasks(
            [task("inside"), task("d", predecessors=("p", "done", "inside")), task("free")]
        )
    )

    assert script.only(steps.StatusesOf) == [steps.StatusesOf(["done", "inside", "p"])]
    (rows,) = script.only(steps.InsertTasks)
    statuses = [r[2 + STATUS_COLUMN] for r in rows.rows]  # after seq and mark
    assert statuses == ["pending", "blocked", "pending"]
    assert [h.status for h in held] == [Status.PENDING, Status.BLOCKED, Status.PENDING]
    (links,) = script.only(steps.InsertLinks)
    assert links.edges == [(5, 102, "waiting"), (6, 102, "satisfied"), (101, 102, "waiting")]
    assert links.counters == [(102, 3, 1)]
    assert links.watched == [5, 101]


def test_a_dependent_of_a_task_nobody_has_is_rejected_by_index() -> None:
    script = Script(statuses_of={})

    with pytest.raises(RejectedItems) as rejected:
        script.run(inserts.insert_tasks([task("ok"), task("d", predecessors=("ghost",))]))

    assert list(rejected.value.errors) == [1]
    assert isinstance(rejected.value.errors[1], InvalidRequest)
    assert not script.only(steps.InsertTasks)


def test_a_workflow_whose_id_is_stored_inserts_nothing() -> None:
    script = Script(insert_workflow=False)

    assert script.run(inserts.insert_workflow(workflow(), [task("a")])) is False
    assert script.ops() == ["insert_workflow"]


def workflow() -> WorkflowRecord:
    return WorkflowRecord("w", "name", T0, None)


def schedule(version: int = 3) -> ScheduleRecord:
    return ScheduleRecord(
        schedule_id="s",
        task_type="noop",
        payload=None,
        options=TaskOptions(),
        cron_expression="* * * * *",
        timezone="UTC",
        jitter_seconds=0,
        misfire_policy="run_once",
        overlap_policy="allow",
        status="active",
        version=version,
        current_seq=1,
        previous_seq=None,
        created_ms=T0,
    )


def test_an_advance_whose_fence_is_stale_writes_nothing() -> None:
    fence = Fence("a", 1, 2)
    script = Script(fences_holding=set())

    done = script.run(inserts.advance_schedules([Advance(schedule(), task("next"), None, fence)]))

    assert done == [None]
    assert script.ops() == ["fences_holding"]


def test_an_advance_that_loses_its_compare_and_set_deletes_its_instance() -> None:
    script = Script(advance_schedule=False)

    done = script.run(inserts.advance_schedules([Advance(schedule(), task("next"), None, None)]))

    assert done == [None]
    assert script.only(steps.DeleteTask) == [steps.DeleteTask(101)]


def test_an_advance_that_skips_cancels_the_skipped_instance() -> None:
    script = Script(advance_schedule=True)
    advance = Advance(schedule(), task("next"), (9, "overlap"), None)

    assert script.run(inserts.advance_schedules([advance])) == [101]
    assert script.only(steps.SkipInstance) == [steps.SkipInstance(9, T0 - 1, "overlap")]


# -- propagation -------------------------------------------------------------------


def ended(seq: int, status: Status, key: str | None = None) -> Mapping[str, Any]:
    return row(seq=seq, task_id=f"t{seq}", status=status, ordering_key=key)


def test_nothing_ended_is_one_read() -> None:
    script = Script(take_propagations=[])

    assert script.run(propagation.propagate(T0, 10)) == Propagated(0, 0, more=False)
    assert script.ops() == ["take_propagations"]


def test_a_success_frees_dependents_whose_last_predecessor_it_was() -> None:
    script = Script(
        take_propagations=[ended(1, Status.SUCCEEDED), ended(2, Status.SUCCEEDED)],
        settle_edges=[(1, 10), (2, 10), (1, 11)],
        count_satisfied=[(10, True), (11, False)],
        unblock=lambda step: len(step.tasks),
        has_propagations=True,
    )

    done = script.run(propagation.propagate(T0, 10))

    assert done == Propagated(1, 0, more=True)
    assert script.only(steps.CountSatisfied) == [steps.CountSatisfied([(10, 2), (11, 1)])]
    assert script.only(steps.Unblock) == [steps.Unblock([(10, 1001)], T0)]
    assert script.only(steps.ForgetPropagations) == [steps.ForgetPropagations([1, 2])]
    assert not script.only(steps.LockKeys)  # no ordering key: no key lock


def test_a_failure_fails_its_dependents_naming_it() -> None:
    script = Script(
        take_propagations=[ended(1, Status.CANCELLED)],
        settle_edges=[(1, 10)],
        fail_upstream=lambda step: len(step.tasks),
    )

    done = script.run(propagation.propagate(T0, 10))

    assert done == Propagated(0, 1, more=False)
    assert script.only(steps.SettleEdges) == [steps.SettleEdges([1], "failed")]
    (failed,) = script.only(steps.FailUpstream)
    assert failed.tasks == [(10, "upstream task t1 ended cancelled")]


def test_an_ended_holder_passes_its_key_to_the_waiting_task_next() -> None:
    script = Script(
        take_propagations=[ended(1, Status.SUCCEEDED, key="k")],
        key_holder=row(holder_seq=1, status="succeeded", lease_expires_at=None),
        next_of_key=(2, "waiting"),
        settle_edges=[],
        count_satisfied=[],
        unblock=0,
    )

    done = script.run(propagation.propagate(T0, 10))

    assert done.unblocked == 1
    assert script.only(steps.LockKeys) == [steps.LockKeys(["k"])]
    assert script.only(steps.HoldKey) == [steps.HoldKey("k", 2)]
    assert script.only(steps.TakeTurn) == [steps.TakeTurn(2, 1001)]


def test_a_cancelled_holder_keeps_its_key_while_its_attempt_may_run() -> None:
    script = Script(
        take_propagations=[ended(1, Status.CANCELLED, key="k")],
        key_holder=row(holder_seq=1, status="cancelled", lease_expires_at=T0 + 500),
        settle_edges=[],
    )

    script.run(propagation.propagate(T0, 10))

    assert not script.only(steps.HoldKey)
    assert script.only(steps.PropagateLater) == [steps.PropagateLater([(1, T0 + 500)])]


def test_a_free_key_with_no_task_left_is_freed() -> None:
    script = Script(key_holder=None, next_of_key=None)

    turn = script.run(propagation.settle_key("k", T0))

    assert turn == propagation.Turn(None)
    assert script.only(steps.FreeKey) == [steps.FreeKey("k")]


# -- claims --------------------------------------------------------------------------


def claim(items: list[tuple[int, int]]) -> steps.Claim:
    return steps.Claim(items, T0, T0 + 30_000, "w", keyed=False)


def test_a_keyed_claim_takes_only_the_tasks_whose_turn_it_is() -> None:
    script = Script(
        keyed_claims=[(1, "k"), (2, "k"), (3, "j")],
        key_holder=lambda step: (
            row(holder_seq=2, status="running", lease_expires_at=T0) if step.key == "k" else None
        ),
        next_of_key=(3, "pending"),
        claim=lambda step: [row(seq=s) for s, _ in step.items],
    )

    rows = script.run(propagation.claim_keyed(claim([(1, T0), (2, T0), (3, T0 + 5)])))

    # 2 holds k (its retry keeps it), 3 is the next of j, which nobody held: 1 waits.
    assert [r["seq"] for r in rows] == [2, 3]
    assert script.only(steps.KeyedClaims) == [steps.KeyedClaims([1, 2, 3], T0 + 5)]
    assert script.ops()[1:3] == ["lock_marks", "lock_keys"]
    assert script.only(steps.LockKeys) == [steps.LockKeys(["j", "k"])]
    assert script.only(steps.HoldKey) == [steps.HoldKey("j", 3)]
    assert script.only(steps.WaitForTurn) == [steps.WaitForTurn([1])]
    (keyed,) = script.only(steps.Claim)
    assert keyed.keyed and keyed.items == [(2, T0), (3, T0 + 5)]


def test_what_a_plain_claim_left() -> None:
    left = propagation.unclaimed([(1, T0), (2, T0), (3, T0)], [row(seq=2)])
    assert left == [(1, T0), (3, T0)]


def test_a_keyed_claim_of_nothing_asks_nothing() -> None:
    script = Script()
    assert script.run(propagation.claim_keyed(claim([]))) == []
    assert script.asked == []


# -- ends of attempts ------------------------------------------------------------------


def end(seq: int, fence: int, *, retry: bool = False) -> Finish:
    return Finish(
        seq,
        fence,
        Outcome.FAILED if retry else Outcome.SUCCEEDED,
        Status.PENDING if retry else Status.SUCCEEDED,
        T0,
        retry_at_ms=T0 + 1000 if retry else None,
    )


def written(step: steps.FinishRows) -> list[Mapping[str, Any]]:
    """Every end's fence holds."""
    return [
        row(seq=r[0], attempts=1, started_at=T0 - 5, worker_id="w", schedule_id=None)
        for r in step.rows
    ]


def test_ends_are_one_statement_and_their_executions_another() -> None:
    script = Script(finish_rows=written)

    answers = script.run(attempts.finish([end(1, 4), end(2, 4, retry=True), end(3, 4)]))

    assert answers == [True, True, True]
    assert script.ops() == ["take_marks", "finish_rows", "insert_executions"]
    (rows,) = script.only(steps.FinishRows)
    assert [r[6] for r in rows.rows] == [None, 1001, None]  # a mark for the retry only
    (executions,) = script.only(steps.InsertExecutions)
    assert [e[0] for e in executions.rows] == [1, 2, 3]


def test_a_task_ended_twice_in_one_batch_is_compared_again_after_the_first() -> None:
    rounds = iter([written, lambda step: []])  # the second finds the version moved on
    script = Script(finish_rows=lambda step: next(rounds)(step))

    answers = script.run(attempts.finish([end(1, 4), end(1, 4)]))

    assert answers == [True, False]
    assert len(script.only(steps.FinishRows)) == 2


def test_a_stale_end_writes_no_execution() -> None:
    script = Script(finish_rows=[])

    assert script.run(attempts.finish([end(1, 4)])) == [False]
    assert script.ops() == ["finish_rows"]


def test_a_cancel_while_running_records_that_attempt() -> None:
    running = row(
        seq=1, attempts=2, started_at=T0 - 5, worker_id="w", schedule_id=None, lease_expires_at=T0
    )
    script = Script(cancel=running)

    assert script.run(attempts.cancel(1, 6, T0 + 1)) is True
    (execution,) = script.only(steps.InsertExecutions)
    assert execution.rows[0][:4] == (1, None, 2, 6)
    assert execution.rows[0][7] == str(Outcome.CANCELLED)


def test_a_cancel_before_any_attempt_records_none() -> None:
    pending = row(
        seq=1, attempts=0, started_at=None, worker_id=None, schedule_id=None, lease_expires_at=None
    )
    script = Script(cancel=pending)

    assert script.run(attempts.cancel(1, 6, T0)) is True
    assert script.ops() == ["cancel"]


def test_redrive_takes_a_mark_for_each_task() -> None:
    script = Script(redrive=lambda step: step.seq != 2)

    assert script.run(attempts.redrive([(1, 3), (2, 3)], T0)) == [True, False]
    assert [s.mark for s in script.only(steps.Redrive)] == [1001, 1002]


def test_every_step_has_an_answer_on_each_store() -> None:
    kinds = [k for k in vars(steps).values() if isinstance(k, type) and issubclass(k, Step)]
    ops = {k.op for k in kinds if k is not Step}
    for store in (SqliteSteps, PostgresSteps):
        assert ops <= set(vars(store)), store.__name__
