"""Repeated submissions: which tasks of an insert repeat an earlier one (rule and plan)."""

from __future__ import annotations

from collections.abc import Callable, Hashable, Sequence

from tickwheel.errors import IdempotencyConflict, RejectedItems, TickwheelError
from tickwheel.models import NewTask
from tickwheel.storage.plans.steps import KeyHolders, KeyRef, Plan, StoredRequests, TakeKeys


def repeats(tasks: Sequence[NewTask]) -> Plan[dict[int, str]]:
    """Which tasks repeat an earlier submission (index -> the task first made for it);
    raises `RejectedItems` naming every conflict. A statement per kind, not per task."""
    found = Repeats(tasks)
    if chosen := found.chosen_ids():
        found.settle_ids((yield StoredRequests(chosen)))
    if rows := found.keys_to_take():
        taken: set[KeyRef] = yield TakeKeys(rows, found.keys_free_before())
        if missing := found.keys_not_taken(taken):
            found.settle_keys((yield KeyHolders(missing)))
    return found.originals()


class Repeats:
    """Which tasks of an insert repeat an earlier submission, so that a retried request
    never makes a second task. A repeat of the same request is answered with the task
    first made for it; a different request under the same id or key is a conflict.

    A submission is named by a task id the client chose (the task's own row is the
    dedupe: no row of its own) or by an idempotency key (a row in `idempotency_keys`,
    held for a window). In the insert's transaction, one statement each, the store
    looks up the chosen ids (`chosen_ids`, then `settle_ids`), takes the keys of the
    tasks still new (`keys_to_take`), and reads the holders of the keys it could not
    take (`keys_not_taken`, then `settle_keys`)."""

    def __init__(self, tasks: Sequence[NewTask]) -> None:
        self._tasks = tasks
        self._originals: dict[int, str] = {}
        self._conflicts: dict[int, TickwheelError] = {}
        # A task naming the same id or key as an earlier one of this insert: judged
        # against that one once it is settled. Index -> (earlier index, field, value).
        self._twins: dict[int, tuple[int, str, str]] = {}
        self._twin_up("task_id", lambda t: (t.task_id, t.task_id) if t.request_hash else None)

    def chosen_ids(self) -> list[str]:
        """The ids the client chose, to look up among the stored tasks (sorted)."""
        return sorted({self._tasks[i].task_id for i in self._open() if self._chosen(i)})

    def settle_ids(self, stored: dict[str, str | None]) -> None:
        """`stored`: the request hash of each chosen id already stored (None for a task
        whose id the server made)."""
        for i in self._open():
            t = self._tasks[i]
            if self._chosen(i) and t.task_id in stored:
                self._judge(i, t.task_id, stored[t.task_id], "task_id", t.task_id)

    def keys_to_take(self) -> list[tuple[str, str, str, str, int]]:
        """(task type, key, task id, request hash, created) of each key the tasks still
        new carry, sorted (a lock order). Called once, after `settle_ids`."""
        self._twin_up(
            "idempotency_key", lambda t: (_key_of(t), t.idempotency.key) if t.idempotency else None
        )
        rows = []
        for i in self._open():
            t = self._tasks[i]
            if t.idempotency is not None:
                key = t.idempotency
                rows.append((t.task_type, key.key, t.task_id, key.request_hash, t.created_ms))
        return sorted(rows)

    def keys_free_before(self) -> int:
        """A key created before this is free to take again (its window has passed)."""
        return min((t.idempotency.since_ms for t in self._tasks if t.idempotency), default=0)

    def keys_not_taken(self, taken: set[KeyRef]) -> list[KeyRef]:
        """Of the keys to take, those the store did not take: their holders to read."""
        refs = {_key_of(self._tasks[i]) for i in self._open()} - {None} - taken
        return sorted(r for r in refs if r is not None)

    def settle_keys(self, holders: dict[KeyRef, tuple[str, str]]) -> None:
        """`holders`: (task id, request hash) of each key not taken, as held."""
        for i in self._open():
            ref = _key_of(self._tasks[i])
            if ref is not None and ref in holders:
                holder, request_hash = holders[ref]
                self._judge(i, holder, request_hash, "idempotency_key", ref[1])

    def originals(self) -> dict[int, str]:
        """Index -> the task id first made for that request; raises `RejectedItems`
        naming every conflict."""
        for i, (first, name, value) in sorted(self._twins.items()):
            if first in self._conflicts:
                self._conflicts[i] = self._conflicts[first]
            else:
                holder = self._originals.get(first, self._tasks[first].task_id)
                self._judge(i, holder, _hash(self._tasks[first]), name, value)
        if self._conflicts:
            raise RejectedItems(self._conflicts)
        return self._originals

    def _twin_up(self, name: str, named: Callable[[NewTask], tuple[Hashable, str] | None]) -> None:
        """Mark each task that names the same (by `named`: what it is named by, and the
        value to show) as an earlier open task of this insert."""
        seen: dict[Hashable, int] = {}
        for i in self._open():
            found = named(self._tasks[i])
            if found is not None:
                first = seen.setdefault(found[0], i)
                if first != i:
                    self._twins[i] = (first, name, found[1])

    def _open(self) -> Sequence[int]:
        """Tasks not yet judged a repeat or a conflict, nor a twin of an earlier one."""
        if not (self._originals or self._conflicts or self._twins):  # the usual case
            return range(len(self._tasks))
        judged = self._originals.keys() | self._conflicts.keys() | self._twins.keys()
        return [i for i in range(len(self._tasks)) if i not in judged]

    def _chosen(self, i: int) -> bool:
        return self._tasks[i].request_hash is not None

    def _judge(self, i: int, holder: str, request_hash: str | None, name: str, value: str) -> None:
        t = self._tasks[i]
        if request_hash is not None and request_hash == _hash(t):
            self._originals[i] = holder
        elif name == "task_id":
            self._conflicts[i] = IdempotencyConflict(
                f"task_id {value!r} is taken by a different request; choose a new id for a"
                " new task",
                holder,
            )
        else:
            self._conflicts[i] = IdempotencyConflict.of(t.task_type, value, holder)


def _key_of(task: NewTask) -> KeyRef | None:
    return (task.task_type, task.idempotency.key) if task.idempotency is not None else None


def _hash(task: NewTask) -> str | None:
    if task.request_hash is not None:
        return task.request_hash
    return task.idempotency.request_hash if task.idempotency is not None else None
