"""The rule for repeated submissions (`plans.Repeats`), without a store: which tasks of
an insert repeat an earlier one, by a task id the client chose or by a key."""

from __future__ import annotations

from dataclasses import replace

import pytest

from tickwheel.errors import IdempotencyConflict, RejectedItems
from tickwheel.models import Idempotency, NewTask, ScheduleType
from tickwheel.storage.plans.repeats import Repeats

T0 = 1_700_000_000_000


def task(task_id: str, *, chosen: str | None = None, key: str | None = None) -> NewTask:
    """`chosen`: the request hash of a client-chosen id; `key`: an idempotency key."""
    made = NewTask(task_id, 0, "noop", None, ScheduleType.IMMEDIATE, T0, T0)
    if key is not None:
        made = replace(made, idempotency=Idempotency(key, chosen or "same", T0 - 1000))
    return replace(made, request_hash=chosen)


def test_a_chosen_id_already_stored_for_the_same_request_is_a_repeat() -> None:
    repeats = Repeats([task("a", chosen="h"), task("b", chosen="h"), task("c")])
    assert repeats.chosen_ids() == ["a", "b"]  # a server-made id is never looked up
    repeats.settle_ids({"a": "h"})
    assert repeats.keys_to_take() == []
    assert repeats.originals() == {0: "a"}


@pytest.mark.parametrize("stored_hash", ["other", None])  # None: an id the server made
def test_a_chosen_id_stored_for_another_request_is_a_conflict(stored_hash: str | None) -> None:
    repeats = Repeats([task("a", chosen="h"), task("b", chosen="h")])
    repeats.settle_ids({"b": stored_hash})
    with pytest.raises(RejectedItems) as rejected:
        repeats.originals()
    (error,) = rejected.value.errors.values()
    assert list(rejected.value.errors) == [1]
    assert isinstance(error, IdempotencyConflict) and error.task_id == "b"
    assert "task_id 'b'" in str(error)


def test_twins_in_one_insert_make_one_task_or_conflict() -> None:
    repeats = Repeats(
        [task("a", chosen="h"), task("a", chosen="h"), task("b", chosen="h"), task("b", chosen="x")]
    )
    assert repeats.chosen_ids() == ["a", "b"]
    repeats.settle_ids({})
    with pytest.raises(RejectedItems) as rejected:
        repeats.originals()
    assert list(rejected.value.errors) == [3]


def test_a_twin_of_a_stored_repeat_is_held_by_the_stored_task() -> None:
    repeats = Repeats([task("a", key="k"), task("b", key="k")])
    assert [row[:3] for row in repeats.keys_to_take()] == [("noop", "k", "a")]
    assert repeats.keys_not_taken(set()) == [("noop", "k")]
    repeats.settle_keys({("noop", "k"): ("older", "same")})
    assert repeats.originals() == {0: "older", 1: "older"}


def test_keys_taken_make_new_tasks_and_keys_held_elsewhere_are_judged() -> None:
    tasks = [task("a", key="k1"), task("b", key="k2"), task("c", key="k3", chosen="other")]
    repeats = Repeats(tasks)
    rows = repeats.keys_to_take()
    assert [r[1] for r in rows] == ["k1", "k2", "k3"]
    assert repeats.keys_free_before() == T0 - 1000
    assert repeats.keys_not_taken({("noop", "k1")}) == [("noop", "k2"), ("noop", "k3")]
    repeats.settle_keys({("noop", "k2"): ("held-b", "same"), ("noop", "k3"): ("held-c", "same")})
    with pytest.raises(RejectedItems) as rejected:
        repeats.originals()
    assert list(rejected.value.errors) == [2]  # k3 is held for a different request


def test_a_task_found_by_its_id_takes_no_key() -> None:
    repeats = Repeats([task("a", chosen="same", key="k")])
    repeats.settle_ids({"a": "same"})
    assert repeats.keys_to_take() == []
    assert repeats.originals() == {0: "a"}
