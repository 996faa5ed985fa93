"""A hierarchical timing wheel: the engine's index of what becomes due, and when.

Why a hierarchical wheel
------------------------
A scheduler keeps asking one question: what is due now? A heap or a sorted index costs
O(log n) per insert and makes every entry pay for its exact position. A wheel
only files an entry under its due second. Finding what is due then costs the size of
the current second's bucket, never a scan of all tasks. Four levels keep that cheap
for far-off dues without a slot per second. The levels work like a clock aligned to the
Unix epoch:

    level 0   60 one-second slots     the current minute
    level 1   60 one-minute slots     the current hour
    level 2   24 one-hour slots       the current day
    level 3   ``day_slots`` day slots   the current rotation of ``day_slots`` days
    overflow  one list                anything later, re-examined when level 3 wraps

An entry goes to the lowest level whose current rotation holds its due second. When
time crosses a boundary, the slot of the higher level for that boundary is cascaded:
its entries are placed again relative to the new time. The highest level goes first.
Each entry moves at most four times. Idle stretches are skipped: time jumps straight
to the next non-empty slot, so a jump of a year costs the number of non-empty slots
crossed, not the number of seconds.

When time reaches a second, that second's slot becomes the *current run*. This run is
sorted by (due_ms, insertion order). ``pop_due`` takes from its head only the entries
whose ``due_ms`` is at or before the given time. Entries later in that second stay
for the next call.

Memory layout
-------------
Entries are never Python objects while they wait. Each slot is a pair of parallel
``array('q')``: keys and dues, about 16 bytes per entry plus the array's small
over-allocation. Empty slots are ``None``. One integer bitmask tells which slots
are occupied, so finding the next non-empty slot is one bit trick. There is no
per-key index. ``cancel`` of an entry in a future slot leaves the entry in place.
It records a tombstone (a count for that (key, due_ms) pair), grouped by due second.
When that second is released, tombstoned entries are skipped and the group is dropped.
"""

from __future__ import annotations

import heapq
from array import array
from bisect import bisect_left, bisect_right
from itertools import islice
from operator import le

# First flat slot index of each level; level 3 runs from _L3 to _L3 + day_slots.
_L1 = 60
_L2 = 120
_L3 = 144
_MINUTE = 60
_HOUR = 3600
_DAY = 86400
# Larger than any due_ms an array('q') can hold: "no entry" for the level-0 minimum.
_NO_DUE = 1 << 63
# Don't shift the consumed prefix of the current run out on every pop: only when it is
# big and most of the array (amortised O(1) per entry).
_COMPACT_AT = 4096


class TimingWheel:
    """A multiset of ``(key, due_ms)`` entries, released in due order as time advances.

    Time is integer milliseconds since the Unix epoch, passed in by the caller. The
    wheel never reads a clock. Keys and dues must fit in a signed 64-bit integer.
    """

    def __init__(self, now_ms: int, *, day_slots: int = 64) -> None:
        if day_slots < 1:
            raise ValueError(f"day_slots must be >= 1, got {day_slots}")
        self._day_slots = day_slots
        self._rotation_s = day_slots * _DAY
        self._now_ms = now_ms
        self._cur = now_ms // 1000  # the current second; every slot holds later seconds
        self._len = 0

        n_slots = _L3 + day_slots
        self._slot_keys: list[array[int] | None] = [None] * n_slots
        self._slot_dues: list[array[int] | None] = [None] * n_slots
        self._occupied = 0  # bit i set <=> slot i is not None
        # Earliest due in each level-0 slot, so next_due_ms is exact there without a scan.
        self._l0_min = [_NO_DUE] * 60

        self._over_keys: array[int] = array("q")
        self._over_dues: array[int] = array("q")
        self._over_min = _NO_DUE

        # Current run: sorted by (due, insertion); [_run_head:] is still pending.
        self._run_keys: array[int] = array("q")
        self._run_dues: array[int] = array("q")
        self._run_head = 0
        # Inserts into the past that would break the run's order. They wait here,
        # unsorted, and are merged in one sort at the next pop. Otherwise loading a
        # backlog of overdue tasks in random order would cost O(n^2).
        self._late_keys: array[int] = array("q")
        self._late_dues: array[int] = array("q")
        self._late_min = _NO_DUE

        # due second -> {(key, due_ms): count}; plus a heap of those seconds, so that
        # groups for seconds that pass with nothing to release are dropped too.
        self._tombstones: dict[int, dict[tuple[int, int], int]] = {}
        self._tomb_seconds: list[int] = []

    # -- public API ----------------------------------------------------------------

    @property
    def now_ms(self) -> int:
        """The time of the last advance (construction or ``pop_due``), never decreasing."""
        return self._now_ms

    def __len__(self) -> int:
        # A cancel of an entry that was never inserted (a broken caller contract) can
        # leave the count low until that second passes; len() must not go negative.
        return max(self._len, 0)

    def insert(self, key: int, due_ms: int) -> None:
        """Schedule ``key`` at ``due_ms``. A due in the past comes out at the next pop."""
        self._len += 1
        second = due_ms // 1000
        if second > self._cur:
            self._file(key, due_ms, second)
            return
        run_dues = self._run_dues
        if not self._late_dues and (not run_dues or due_ms >= run_dues[-1]):
            self._run_keys.append(key)
            run_dues.append(due_ms)
        else:
            self._late_keys.append(key)
            self._late_dues.append(due_ms)
            if due_ms < self._late_min:
                self._late_min = due_ms

    def cancel(self, key: int, due_ms: int) -> bool:
        """Remove one ``(key, due_ms)`` entry.

        Returns False when the entry was already released: its second has been reached
        and it is no longer in the current run. Callers must cancel only entries they
        inserted. A future entry is not looked up; a tombstone is recorded for it.
        """
        second = due_ms // 1000
        if second > self._cur:
            group = self._tombstones.get(second)
            if group is None:
                group = self._tombstones[second] = {}
                heapq.heappush(self._tomb_seconds, second)
            entry = (key, due_ms)
            group[entry] = group.get(entry, 0) + 1
            self._len -= 1
            return True
        run_dues = self._run_dues
        start = bisect_left(run_dues, due_ms, self._run_head)
        stop = bisect_right(run_dues, due_ms, start)
        if _remove(self._run_keys, run_dues, start, stop, key, due_ms):
            self._len -= 1
            return True
        if _remove(self._late_keys, self._late_dues, 0, len(self._late_dues), key, due_ms):
            if due_ms == self._late_min:
                self._late_min = min(self._late_dues, default=_NO_DUE)
            self._len -= 1
            return True
        return False

    def pop_due(self, now_ms: int) -> list[tuple[int, int]]:
        """Advance to ``now_ms`` and return the entries due by then.

        The result is ``(key, due_ms)`` pairs sorted by (due_ms, insertion order).
        A ``now_ms`` earlier than the last one does not move time backwards.
        """
        if now_ms > self._now_ms:
            self._now_ms = now_ms
        now_ms = self._now_ms
        if self._late_dues:
            self._merge_late()
        target = now_ms // 1000
        if target > self._cur:
            self._advance(target)
        return self._take(now_ms)

    def prepare(self, until_ms: int) -> None:
        """Stage the entries due up to ``until_ms`` into the sorted current run ahead of
        time, releasing nothing: the cascade and sort of a large bucket happen before its
        boundary, so at the boundary only the release is left (seed 002 "pre-warming").

        Inserts for the staged seconds join the run in due order, and ``pop_due`` still
        returns only what is due, so staging never makes anything early.
        """
        if self._late_dues:
            self._merge_late()
        target = until_ms // 1000
        if target > self._cur:
            self._advance(target)

    def next_due_ms(self) -> int | None:
        """The earliest time at which ``pop_due`` could return something.

        The answer is exact when the current run is not empty, and exact for level-0
        entries, barring cancelled ones. Otherwise it is the start of the next occupied
        slot: a lower bound, never later than the true next due. Returns None when
        nothing is stored.
        """
        best = self._late_min
        if self._run_head < len(self._run_dues):
            best = min(best, self._run_dues[self._run_head])
        if best != _NO_DUE:
            return best
        slot = _lowest_bit(self._occupied)
        if slot >= 0:
            return self._l0_min[slot] if slot < _L1 else self._slot_start(slot) * 1000
        if self._over_dues:
            return self._over_min
        return None

    # -- filing and releasing --------------------------------------------------------

    def _file(self, key: int, due_ms: int, second: int) -> None:
        """Put a future entry (``second`` > current second) on its level."""
        cur = self._cur
        if second // _MINUTE == cur // _MINUTE:
            slot = second % 60
            if due_ms < self._l0_min[slot]:
                self._l0_min[slot] = due_ms
        elif second // _HOUR == cur // _HOUR:
            slot = _L1 + second // _MINUTE % 60
        elif second // _DAY == cur // _DAY:
            slot = _L2 + second // _HOUR % 24
        elif second // self._rotation_s == cur // self._rotation_s:
            slot = _L3 + second // _DAY % self._day_slots
        else:
            self._over_keys.append(key)
            self._over_dues.append(due_ms)
            if due_ms < self._over_min:
                self._over_min = due_ms
            return
        keys = self._slot_keys[slot]
        dues = self._slot_dues[slot]
        if keys is None or dues is None:
            self._slot_keys[slot] = array("q", (key,))
            self._slot_dues[slot] = array("q", (due_ms,))
            self._occupied |= 1 << slot
        else:
            keys.append(key)
            dues.append(due_ms)

    def _slot_start(self, slot: int) -> int:
        """The first second covered by an occupied slot (in the current rotations)."""
        cur = self._cur
        if slot < _L1:
            return cur - cur % _MINUTE + slot
        if slot < _L2:
            return cur - cur % _HOUR + (slot - _L1) * _MINUTE
        if slot < _L3:
            return cur - cur % _DAY + (slot - _L2) * _HOUR
        return cur - cur % self._rotation_s + (slot - _L3) * _DAY

    def _next_event(self) -> int | None:
        """The next second after the current one at which anything must be cascaded
        or released. The lowest occupied bit is both the lowest non-empty level and
        its earliest slot, because each level only holds seconds after the current one.
        """
        slot = _lowest_bit(self._occupied)
        if slot >= 0:
            return self._slot_start(slot)
        if self._over_dues:
            second = self._over_min // 1000
            return second - second % self._rotation_s
        return None

    def _advance(self, target: int) -> None:
        # Jump from event to event, never second by second. Between events every entry
        # stays correctly filed, because no occupied slot's period has been reached.
        while True:
            event = self._next_event()
            if event is None or event > target:
                break
            self._cur = event
            self._release(event)
        self._cur = target
        seconds = self._tomb_seconds
        while seconds and seconds[0] <= target:
            self._drop_tombstones(self._tombstones.pop(heapq.heappop(seconds), None))

    def _release(self, second: int) -> None:
        """Cascade every boundary that ``second`` starts (highest level first), then
        turn the entries due in ``second`` into the tail of the current run."""
        due_keys: array[int] = array("q")
        due_dues: array[int] = array("q")
        if second % self._rotation_s == 0 and self._over_dues:
            keys, dues = self._over_keys, self._over_dues
            self._over_keys, self._over_dues = array("q"), array("q")
            self._over_min = _NO_DUE
            self._refile(keys, dues, due_keys, due_dues)
        if second % _DAY == 0:
            self._cascade(_L3 + second // _DAY % self._day_slots, due_keys, due_dues)
        if second % _HOUR == 0:
            self._cascade(_L2 + second // _HOUR % 24, due_keys, due_dues)
        if second % _MINUTE == 0:
            self._cascade(_L1 + second // _MINUTE % 60, due_keys, due_dues)
        slot = second % 60
        slot_keys = self._slot_keys[slot]
        if slot_keys is not None:
            slot_dues = self._take_slot(slot)
            self._l0_min[slot] = _NO_DUE
            if due_dues:
                due_keys.extend(slot_keys)
                due_dues.extend(slot_dues)
            else:
                due_keys, due_dues = slot_keys, slot_dues
        group = self._tombstones.pop(second, None)
        if group:
            due_keys, due_dues = self._skip_tombstoned(due_keys, due_dues, group)
        if not due_dues:
            return
        due_keys, due_dues = _sort_by_due(due_keys, due_dues)
        # Everything already in the run is due in an earlier second, so appending keeps
        # the run sorted.
        if self._run_head == len(self._run_dues):
            self._run_keys, self._run_dues, self._run_head = due_keys, due_dues, 0
        else:
            self._run_keys.extend(due_keys)
            self._run_dues.extend(due_dues)

    def _take_slot(self, slot: int) -> array[int]:
        """Empty a slot; the caller has already read its keys. Returns its dues."""
        dues = self._slot_dues[slot]
        assert dues is not None
        self._slot_keys[slot] = None
        self._slot_dues[slot] = None
        self._occupied &= ~(1 << slot)
        return dues

    def _cascade(self, slot: int, due_keys: array[int], due_dues: array[int]) -> None:
        keys = self._slot_keys[slot]
        if keys is not None:
            self._refile(keys, self._take_slot(slot), due_keys, due_dues)

    def _refile(
        self, keys: array[int], dues: array[int], due_keys: array[int], due_dues: array[int]
    ) -> None:
        """File entries again relative to the current second. Entries already due go
        to ``due_*``. Relative order is kept, so ties stay in insertion order."""
        cur = self._cur
        file = self._file
        for key, due_ms in zip(keys, dues, strict=True):
            second = due_ms // 1000
            if second > cur:
                file(key, due_ms, second)
            else:
                due_keys.append(key)
                due_dues.append(due_ms)

    def _skip_tombstoned(
        self, keys: array[int], dues: array[int], group: dict[tuple[int, int], int]
    ) -> tuple[array[int], array[int]]:
        kept_keys: array[int] = array("q")
        kept_dues: array[int] = array("q")
        for key, due_ms in zip(keys, dues, strict=True):
            entry = (key, due_ms)
            count = group.get(entry)
            if count:
                if count == 1:
                    del group[entry]
                else:
                    group[entry] = count - 1
            else:
                kept_keys.append(key)
                kept_dues.append(due_ms)
        self._drop_tombstones(group)
        return kept_keys, kept_dues

    def _drop_tombstones(self, group: dict[tuple[int, int], int] | None) -> None:
        # Tombstones left once their second is released matched no entry: those
        # cancels removed nothing, so give them back to the live count.
        if group:
            self._len += sum(group.values())

    # -- the current run -------------------------------------------------------------

    def _merge_late(self) -> None:
        # Run entries were inserted before any late entry with the same due (a late
        # entry only exists while the run's tail is later). A stable sort of run + late
        # therefore keeps insertion order among ties. Timsort merges the sorted run in
        # linear time.
        head = self._run_head
        keys = self._run_keys[head:] + self._late_keys
        dues = self._run_dues[head:] + self._late_dues
        self._run_keys, self._run_dues = _sort_by_due(keys, dues)
        self._run_head = 0
        self._late_keys, self._late_dues = array("q"), array("q")
        self._late_min = _NO_DUE

    def _take(self, now_ms: int) -> list[tuple[int, int]]:
        dues = self._run_dues
        head, end = self._run_head, len(dues)
        if head == end or dues[head] > now_ms:
            return []
        stop = end if dues[end - 1] <= now_ms else bisect_right(dues, now_ms, head)
        keys = self._run_keys
        out = list(zip(keys[head:stop], dues[head:stop], strict=True))
        if stop == end:
            self._run_keys, self._run_dues, self._run_head = array("q"), array("q"), 0
        elif stop > _COMPACT_AT and 2 * stop > end:
            del keys[:stop]
            del dues[:stop]
            self._run_head = 0
        else:
            self._run_head = stop
        self._len -= len(out)
        return out


def _lowest_bit(mask: int) -> int:
    """Index of the lowest set bit, or -1 for 0."""
    return (mask & -mask).bit_length() - 1


def _sort_by_due(keys: array[int], dues: array[int]) -> tuple[array[int], array[int]]:
    """Stable sort of two parallel arrays by due (ties keep their order)."""
    if all(map(le, dues, islice(dues, 1, None))):
        return keys, dues
    order = sorted(range(len(dues)), key=dues.__getitem__)
    return array("q", map(keys.__getitem__, order)), array("q", map(dues.__getitem__, order))


def _remove(
    keys: array[int], dues: array[int], start: int, stop: int, key: int, due_ms: int
) -> bool:
    """Delete the first ``(key, due_ms)`` in ``[start, stop)``; False if there is none."""
    i = start
    while True:
        try:
            i = dues.index(due_ms, i, stop)
        except ValueError:
            return False
        if keys[i] == key:
            del keys[i]
            del dues[i]
            return True
        i += 1
