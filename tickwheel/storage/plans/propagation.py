"""Telling dependents that their predecessors ended, and passing ordering keys on
(rules and plans).

The dependency resolver drains the `propagations` outbox: each edge is settled once,
counters grow within their totals, freed dependents become pending due now (with a new
mark for the loader), dependents of a failure become `upstream_failed` (their own news
is queued by the same trigger, level by level), and the ordering key of an ended task
passes to the key's next task. A claim of keyed tasks settles their keys the same way.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Sequence
from dataclasses import replace
from typing import NamedTuple

from tickwheel.models import Status
from tickwheel.storage.plans.steps import (
    Claim,
    CountSatisfied,
    FailUpstream,
    ForgetPropagations,
    FreeKey,
    HasPropagations,
    HoldKey,
    KeyedClaims,
    KeyHolder,
    LockKeys,
    LockMarks,
    NextOfKey,
    Plan,
    PropagateLater,
    SettleEdges,
    TakePropagations,
    TakeTurn,
    Unblock,
    WaitForTurn,
    take_marks,
)
from tickwheel.storage.records import Propagated
from tickwheel.storage.rows import Row


def propagate(now_ms: int, limit: int) -> Plan[Propagated]:
    """One round of the resolver, over up to `limit` ended tasks. Doing it twice
    changes nothing: each edge leaves `waiting` once."""
    ended: list[Row] = yield TakePropagations(now_ms, limit)
    if not ended:
        return Propagated(0, 0, more=False)
    yield LockMarks()  # before the edges, counters and keys it will lock
    ok = [r["seq"] for r in ended if r["status"] == Status.SUCCEEDED]
    failed = {
        r["seq"]: (r["task_id"], r["status"]) for r in ended if r["status"] != Status.SUCCEEDED
    }
    unblocked, again = yield from pass_keys(ended, now_ms)
    upstream_failed = 0
    if ok:
        settled: list[tuple[int, int]] = yield SettleEdges(ok, "satisfied")
        counts = Counter(dependent for _, dependent in settled)
        counted: list[tuple[int, bool]] = yield CountSatisfied(list(counts.items()))
        free = [seq for seq, complete in counted if complete]
        marks = yield from take_marks(len(free))
        unblocked += yield Unblock(list(zip(free, marks, strict=True)), now_ms)
    if failed:
        settled = yield SettleEdges(list(failed), "failed")
        errors = {
            dependent: "upstream task {} ended {}".format(*failed[predecessor])
            for predecessor, dependent in settled
        }
        upstream_failed = yield FailUpstream(list(errors.items()), now_ms)
    yield ForgetPropagations([r["seq"] for r in ended])
    if again:
        yield PropagateLater(again)
    more = yield HasPropagations(now_ms)
    return Propagated(unblocked, upstream_failed, more=bool(more))


def pass_keys(ended: Sequence[Row], now_ms: int) -> Plan[tuple[int, list[tuple[int, int]]]]:
    """Pass on the ordering keys of tasks that ended. Returns how many waiting tasks
    took their turn, and (seq, not before) of ends to tell again later."""
    grouped = ends_by_key(ended)
    if not grouped:
        return 0, []
    yield LockKeys(list(grouped))
    turns, again = 0, []
    for key in grouped:
        turn = yield from settle_key(key, now_ms)
        turns += turn.took_turn
        again += later(grouped, key, turn)
    return turns, again


def settle_key(key: str, now_ms: int) -> Plan[Turn]:
    """Who holds `key` now: its holder while it keeps it (`still_held`), else the
    earliest due of its tasks not yet run, whose turn it becomes (a waiting one is made
    pending again). The caller holds the key's lock."""
    kept = still_held((yield KeyHolder(key)), now_ms)
    if kept is not None:
        return kept
    nxt: tuple[int, str] | None = yield NextOfKey(key, now_ms)
    if nxt is None:
        yield FreeKey(key)
        return Turn(None)
    seq, status = nxt
    yield HoldKey(key, seq)
    if status != Status.WAITING:
        return Turn(seq)
    (mark,) = yield from take_marks(1)
    yield TakeTurn(seq, mark)
    return Turn(seq, took_turn=True)


def unclaimed(items: Sequence[tuple[int, int]], claimed: Iterable[Row]) -> list[tuple[int, int]]:
    """The items a plain claim left: cancelled meanwhile, or behind an ordering key."""
    taken = {r["seq"] for r in claimed}
    return [item for item in items if item[0] not in taken]


def claim_keyed(claim: Claim) -> Plan[list[Row]]:
    """Claim the keyed tasks of `claim.items` whose turn it is on their ordering key;
    the others wait for it."""
    if not claim.items:  # every item was claimed (a seq pulled twice counts once)
        return []
    latest = max(triggered for _, triggered in claim.items)
    keyed: list[tuple[int, str]] = yield KeyedClaims([s for s, _ in claim.items], latest)
    if not keyed:
        return []
    keys = sorted({key for _, key in keyed})
    # The marks' lock, then the keys': the order a propagation takes them in too.
    yield LockMarks()
    yield LockKeys(keys)
    holders = {}
    for key in keys:
        holders[key] = (yield from settle_key(key, claim.now)).holder
    turn = {seq for seq, key in keyed if holders[key] == seq}
    yield WaitForTurn([seq for seq, _ in keyed if seq not in turn])
    if not turn:
        return []
    mine = [item for item in claim.items if item[0] in turn]
    rows: list[Row] = yield replace(claim, items=mine, keyed=True)
    return rows


class Turn(NamedTuple):
    holder: int | None
    took_turn: bool = False  # a waiting task's turn came: it is pending again
    busy_until: int | None = None  # a cancelled holder's attempt may run until then


def still_held(held: Row | None, now_ms: int) -> Turn | None:
    """The key's turn while its holder (holder seq, status, lease end) keeps it: until
    it ends for good, and a cancelled one until its attempt's lease ends; else None."""
    if held is None:
        return None
    holder, status, lease_until = held["holder_seq"], held["status"], held["lease_expires_at"]
    if not Status(status).is_final:
        return Turn(holder)
    if status == Status.CANCELLED and lease_until is not None and lease_until > now_ms:
        return Turn(holder, busy_until=lease_until)
    return None


def ends_by_key(ended: Iterable[Row]) -> dict[str, list[int]]:
    """The ended tasks (seq, task id, status, ordering key) grouped by key, keys sorted
    (a lock order)."""
    grouped: dict[str, list[int]] = {}
    for row in ended:
        if row["ordering_key"] is not None:
            grouped.setdefault(row["ordering_key"], []).append(row["seq"])
    return dict(sorted(grouped.items()))


def later(ended: dict[str, list[int]], key: str, turn: Turn) -> list[tuple[int, int]]:
    """(seq, not before) of the ends to tell again: a cancelled holder keeps its key
    while its attempt may still be running."""
    if turn.busy_until is None:
        return []
    return [(seq, turn.busy_until) for seq in ended[key]]
