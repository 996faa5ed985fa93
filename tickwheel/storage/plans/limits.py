"""Rate and concurrency limits in the claim's transaction, and the wakes that let held
tasks go (rules and plans; the rules themselves are `core.limits`).

A claim first takes, in one statement, the tasks no limit applies to (the store knows
which task types, queues and keys have limits, as read at most a second ago). The rest
come here: their limits' rows are locked, the running tasks of each concurrency limit
counted, and the tasks admitted in priority and due order. Admitted ones are claimed
(those with an ordering key only on their turn); the others stay pending, held by a
limit (`held_by`), out of the ready queue. A limit is woken (`limit_wakes`) when its
window frees a start, or when a task that held one of its slots leaves `running` (a
trigger); the wake lets as many held tasks go as there is room for, in order, and the
loader takes them to the ready queue like new tasks.

Locks are taken limits first, then the marks' counter, then keys and task rows: the
order every other writer keeps. Wakes are an outbox only ever inserted into, and deleted
by the one resolver that locked them (`SKIP LOCKED`), so no writer waits on a wake.
Windows go by the store's clock, read once the limits' locks are had.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field, replace

from tickwheel.core.limits import (
    Candidate,
    Limit,
    LimitState,
    Rate,
    Scope,
    Window,
    admit,
    ids_of,
    next_wake,
    wake_room,
)
from tickwheel.storage.plans.propagation import claim_keyed
from tickwheel.storage.plans.steps import (
    Claim,
    DueWakes,
    ForgetWakes,
    HeldHeads,
    HeldOf,
    HoldTasks,
    LimitedCandidates,
    ListLimits,
    LockLimits,
    LockMarks,
    Plan,
    ReleaseHeld,
    RunningOf,
    StoreNow,
    SweepWakes,
    WakeLater,
    WriteWindows,
    take_marks,
)
from tickwheel.storage.records import LimitUse
from tickwheel.storage.rows import Row

WAKE_BATCH = 1000  # held tasks one wake lets go at most, per limit


@dataclass
class Taken:
    """What a limited claim did: the rows it claimed, and the items it left for the
    claimer to put back (admissible, but beyond the tasks it can start now)."""

    rows: list[Row] = field(default_factory=list)
    deferred: list[int] = field(default_factory=list)


def limit_of(row: Row) -> Limit:
    """A limit's rule from its row."""
    rate = None
    if row["rate_count"] is not None:
        rate = Rate(row["rate_count"], row["rate_period_ms"])
    return Limit(Scope(row["scope"]), row["name"], rate, row["concurrency"])


def in_use(now_ms: int, limit_id: str | None = None) -> Plan[list[LimitUse]]:
    """Every limit (or the one named) with its use: a read, no lock taken."""
    rows: list[Row] = yield ListLimits(limit_id)
    if not rows:
        return []
    running: dict[str, tuple[int, int | None]] = yield RunningOf(
        [r["limit_id"] for r in rows], now_ms
    )
    uses = []
    for r in rows:
        limit = limit_of(r)
        window = Window.decode(r["recent_claims"])
        started = 0 if limit.rate is None else window.used(now_ms, limit.rate)
        count = running.get(r["limit_id"], (0, None))[0]
        uses.append(LimitUse(limit, r["updated_at"], started, count, r["held"]))
    return uses


def read_states(ids: Sequence[str], now_ms: int) -> Plan[dict[str, LimitState]]:
    """The limits of `ids` that exist, locked, with their use."""
    locked: list[Row] = yield LockLimits(sorted(set(ids)))
    if not locked:
        return {}
    found = [r["limit_id"] for r in locked]
    running: dict[str, tuple[int, int | None]] = yield RunningOf(found, now_ms)
    heads: dict[str, tuple[int, int, int]] = yield HeldHeads(found)
    states = {}
    for r in locked:
        lid = r["limit_id"]
        head = heads.get(lid)
        count, cancelled_until = running.get(lid, (0, None))
        states[lid] = LimitState(
            limit_of(r),
            Window.decode(r["recent_claims"]),
            count,
            None if head is None else (-head[0], head[1], head[2]),
            cancelled_until,
        )
    return states


def claim_limited(claim: Claim, start_now: int | None) -> Plan[Taken]:
    """Claim the items a plain claim skipped, within the limits that apply to them;
    `start_now`: the most limited tasks the claimer can start at once (None: any)."""
    if not claim.items:
        return Taken()
    rows: list[Row] = yield LimitedCandidates(claim.items, claim.now)
    if not rows:
        return Taken()
    ids = {r["seq"]: ids_of(r["task_type"], r["queue"], r["limit_key"]) for r in rows}
    states = yield from read_states([lid for each in ids.values() for lid in each], claim.now)
    # Judged, and counted, by the store's clock once the limits' locks are had: one clock
    # for every claimer (theirs may differ by a round trip), and a claim that waited for
    # the locks never dates its starts early.
    now = (yield StoreNow()) if states else claim.now
    limited = [r for r in rows if any(lid in states for lid in ids[r["seq"]])]
    admission = admit(
        (Candidate(r["seq"], r["priority"], r["due_time"], ids[r["seq"]]) for r in limited),
        states,
        now,
        start_now=start_now,
    )
    free = {r["seq"] for r in rows} - {r["seq"] for r in limited} | set(admission.admitted)
    slots = any(states[lid].limit.concurrency for lid in admission.taken)
    claimed = yield from _claim(claim, rows, free, holds_slot=slots)
    if admission.held:
        yield HoldTasks(sorted(admission.held.items()))
    taken = Counter(lid for r in claimed for lid in ids[r["seq"]] if lid in states)
    yield from _spend(states, taken, now)
    yield from _wake_holding(states, taken, admission.held.values(), now)
    return Taken(claimed, admission.deferred)


def _claim(
    claim: Claim, rows: Iterable[Row], free: set[int], *, holds_slot: bool
) -> Plan[list[Row]]:
    """Claim the `free` of `rows`: those with an ordering key only on their turn."""
    items = [item for item in claim.items if item[0] in free]
    keyed = {r["seq"] for r in rows if r["seq"] in free and r["ordering_key"] is not None}
    plain = [item for item in items if item[0] not in keyed]
    done = replace(claim, keyed=True, holds_slot=holds_slot)
    claimed: list[Row] = (yield replace(done, items=plain)) if plain else []
    if keyed:
        claimed += yield from claim_keyed(replace(done, items=[i for i in items if i[0] in keyed]))
    return claimed


def _spend(states: dict[str, LimitState], taken: Counter[str], now_ms: int) -> Plan[None]:
    """Record the claims in the windows of the rate limits they were taken under."""
    windows = []
    for lid, count in sorted(taken.items()):
        state = states[lid]
        if state.limit.rate is not None:
            window = state.window.spend(now_ms, state.limit.rate, count)
            states[lid] = replace(state, window=window, running=state.running + count)
            windows.append((lid, window.encode()))
        else:
            states[lid] = replace(state, running=state.running + count)
    if windows:
        yield WriteWindows(windows)


def _wake_holding(
    states: dict[str, LimitState], taken: Counter[str], held_by: Iterable[str], now_ms: int
) -> Plan[None]:
    """Wake, when they will next have room, the limits that hold tasks (those that held
    some before this claim, and those that hold some now)."""
    holding = set(held_by) | {lid for lid, s in states.items() if s.held_head is not None}
    wakes = []
    for lid in sorted(holding):
        at = next_wake(states[lid], now_ms)
        if at is not None:
            wakes.append((lid, at))
    if wakes:
        yield WakeLater(wakes)


def wake(now_ms: int, *, sweep: bool = False, limit: int = 100) -> Plan[int]:
    """Let go the tasks that limits whose wake is due hold, as many as each has room
    for; `sweep`: wake every limit that holds tasks first (a wake that was missed).
    Returns how many tasks were let go."""
    if sweep:
        yield SweepWakes(now_ms)
    taken: list[tuple[int, str]] = yield DueWakes(now_ms, limit)
    if not taken:
        return 0
    due = sorted({lid for _, lid in taken})
    states = yield from read_states(due, now_ms)
    if any(s.limit.rate for s in states.values()):  # windows are in the store's time
        now_ms = yield StoreNow()
    yield LockMarks()
    released, again = 0, []
    for lid in due:
        state = states.get(lid)
        # A limit removed since: everything it held goes, a batch at a time.
        room = WAKE_BATCH if state is None else min(wake_room(state, now_ms), WAKE_BATCH)
        seqs: list[int] = (yield HeldOf(lid, room)) if room else []
        marks = yield from take_marks(len(seqs))
        if seqs:
            yield ReleaseHeld(list(zip(seqs, marks, strict=True)))
        released += len(seqs)
        if state is None:
            if len(seqs) == room:
                again.append((lid, now_ms))
        elif not seqs:
            at = next_wake(state, now_ms)
            if at is not None and at > now_ms:
                again.append((lid, at))
    yield ForgetWakes([wake for wake, _ in taken])
    if again:
        yield WakeLater(again)
    return released
