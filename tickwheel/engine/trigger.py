"""The trigger engine: one timing wheel per owned partition, kept filled by the loader.

Tasks due within the horizon live on the wheels; later ones stay only in the store
and are loaded as the horizon advances (a range scan on (partition, due_time)).
Every time a task becomes pending (inserted, retried, reaped) it is stamped with a new
mark from a counter in the store, and the loader scans marks above the last one seen:
so a task made pending inside the loaded range, by this process or any other, reaches
its wheel within a load interval even if nothing told this process about it. A tick
releases exactly what is due, in due order, to the ready queue.

A queue shared over the network (Redis) takes tasks ahead of time: each tick stages
what falls due within the queue's `stage_ahead_ms`, and the queue shows each one only
from its due time (seed 002 "pre-warming"), so a burst due in one second has already
travelled when that second comes. Cron instances are the exception: they wait here
for their due time, since their schedule advances when they fire.
"""

from __future__ import annotations

import asyncio
import bisect
import heapq
import logging
from collections.abc import Callable, Collection, Coroutine, Iterable, Iterator, Sequence
from operator import itemgetter
from typing import Any

from tickwheel.clock import Clock
from tickwheel.core.wheel import TimingWheel
from tickwheel.engine.routing import Route, RoutingKeys
from tickwheel.metrics.recorder import Recorder
from tickwheel.models import TaskRecord, WheelEntry
from tickwheel.outage import log_failure
from tickwheel.periodic import Periodic
from tickwheel.queue.base import ReadyItem, ReadyQueue
from tickwheel.storage.base import DispatchStore
from tickwheel.waiting import wait_event

log = logging.getLogger(__name__)

RELEASE_CHUNK = 5000
PRESTAGE_MS = 1000

CronHandler = Callable[[list[tuple[Route, int]], int], Coroutine[Any, Any, None]]


class TriggerEngine:
    def __init__(
        self,
        *,
        store: DispatchStore,
        queue: ReadyQueue,
        clock: Clock,
        on_cron: CronHandler,
        horizon_seconds: float = 60.0,
        load_interval_seconds: float = 1.0,
        metrics: Recorder | None = None,
        on_released: Callable[[list[ReadyItem]], None] | None = None,
    ) -> None:
        self._store = store
        self._metrics = metrics or Recorder(clock)
        self._on_released = on_released  # told of each chunk pushed or staged (traces)
        self._queue = queue
        self._clock = clock
        self._on_cron = on_cron
        self._horizon_ms = round(horizon_seconds * 1000)
        self._keys = RoutingKeys()
        self._wheels: dict[int, TimingWheel] = {}
        self._load_lock = asyncio.Lock()
        self._loaded_until = clock.now_ms()
        self._mark_seen = 0
        self._wakeup = asyncio.Event()
        self._loader = Periodic(
            "loading the wheels",
            self.load_once,
            clock=clock,
            every_seconds=load_interval_seconds,
            log=log,
        )
        self._cron_tasks: set[asyncio.Task[None]] = set()
        # The watermarks: every task due up to `triggered_until` has been pushed (cron
        # instances passed on), and up to `handed_until` pushed or staged. They move
        # only past what the queue took.
        self.triggered_until = clock.now_ms()
        self.handed_until = self.triggered_until + queue.stage_ahead_ms
        self.released = 0
        self._unreleased: list[tuple[int, int]] = []  # popped, not pushed: first next time
        self._stage_ahead_ms = queue.stage_ahead_ms
        # Cron instances popped while staging, before their due time: partition ->
        # heap of (due_ms, key), released here when due.
        self._early_cron: dict[int, list[tuple[int, int]]] = {}
        # Seqs offered since the last load: their new marks will show them to the
        # loader's mark scan too, which must not put them on a wheel a second time.
        self._offered: set[int] = set()

    # -- ownership -----------------------------------------------------------

    @property
    def partitions(self) -> frozenset[int]:
        return frozenset(self._wheels)

    async def start(self) -> None:
        self._mark_seen = await self._store.max_mark()

    async def gain(self, partitions: Collection[int]) -> int:
        """Own partitions: load everything pending in them up to the loaded horizon,
        including what is overdue (a previous owner may have died before triggering it).
        One load for all of them: over a slow link, taking 64 partitions one round trip
        each outlasted the lease they were taken under. Answers how many tasks it loaded
        (the leases log one line per change of ownership)."""
        if not partitions:
            return 0
        async with self._load_lock:
            now = self._clock.now_ms()
            rows = await self._store.load_pending(
                sorted(partitions), due_after=None, due_until=self._loaded_until
            )
            for partition in partitions:
                self._wheels[partition] = TimingWheel(now)
            self._insert(rows)
        return len(rows)

    def lose(self, partition: int) -> None:
        """Stop triggering a partition at once; its tasks stay in the store for the next owner."""
        self._early_cron.pop(partition, None)
        self._wheels.pop(partition, None)

    # -- entries -------------------------------------------------------------

    def offer(self, entries: Iterable[WheelEntry]) -> None:
        """Tasks this node just made pending (retries, expired leases): put those it owns
        and that fall inside the loaded range on their wheel; the loader finds the rest."""
        offered = [e for e in entries if e.due_ms <= self._loaded_until]
        self._offered.update(e.seq for e in offered)
        self._insert(offered)

    def forget(self, task: TaskRecord) -> None:
        """A cancelled task leaves its wheel now rather than at its due time (the claim
        would refuse it anyway): its slot's memory is freed early."""
        wheel = self._wheels.get(task.partition)
        if wheel is None or task.due_ms > self._loaded_until:
            return  # not on a wheel here
        o = task.options
        key = self._keys.key(task.seq, o.queue, o.priority, task.schedule_id is not None)
        wheel.cancel(key, task.due_ms)

    async def put_back(self, items: Sequence[ReadyItem]) -> None:
        """Items pulled and not claimed, back at the head of their lanes."""
        await self._queue.put_back(items)

    def poke(self) -> None:
        """New tasks were committed: look for them now instead of at the next load."""
        self._loader.wake()

    def _insert(self, rows: Iterable[WheelEntry]) -> None:
        keys, wheels = self._keys, self._wheels
        inserted = False
        for row in rows:
            wheel = wheels.get(row.partition)
            if wheel is None:
                continue
            try:
                key = keys.key(row.seq, row.queue, row.priority, row.is_cron)
            except ValueError:  # past the limit of distinct queues: this task waits, not all
                log.error("task seq %d cannot be routed to queue %r", row.seq, row.queue)
                continue
            wheel.insert(key, row.due_ms)
            inserted = True
        if inserted:
            self._wakeup.set()

    def size(self) -> int:
        return sum(len(w) for w in self._wheels.values())

    # -- the loader ----------------------------------------------------------

    async def run_loader(self) -> None:
        await self._loader.run()

    async def load_once(self) -> None:
        async with self._load_lock:
            target = self._clock.now_ms() + self._horizon_ms
            owned = list(self._wheels)
            if not owned:
                self._loaded_until = max(self._loaded_until, target)
                return
            offered, self._offered = self._offered, set()
            mark = await self._store.max_mark()
            rows = await self._store.load_pending(
                owned, due_after=self._loaded_until, due_until=target
            )
            new = await self._store.load_pending(
                owned, due_after=None, due_until=target, mark_after=self._mark_seen
            )
            known = {r.seq for r in rows} | offered | self._offered
            self._insert(rows)
            self._insert(r for r in new if r.seq not in known)
            self._loaded_until = target
            # Marks follow commit order, so every mark up to the highest one returned
            # was visible to the scan: none of them needs to be read again.
            self._mark_seen = max([mark, self._mark_seen, *(r.mark for r in new)])

    # -- the tick ------------------------------------------------------------

    async def run_trigger(self, max_sleep_seconds: float = 0.25) -> None:
        while True:
            now = self._clock.now_ms()
            try:
                await self.tick(now)
            except Exception as error:  # a failed push must not stop the clock
                log_failure(log, error, "releasing due tasks failed; retrying")
                await asyncio.sleep(0.1)
            # Cascade and sort the next second's buckets now, not at their boundary.
            ahead = self._stage_ahead_ms
            for wheel in self._wheels.values():
                wheel.prepare(now + ahead + PRESTAGE_MS)
            next_tick = min(
                (
                    *(d - ahead for w in self._wheels.values() if (d := w.next_due_ms())),
                    *(heap[0][0] for heap in self._early_cron.values()),
                ),
                default=None,
            )
            sleep = max_sleep_seconds
            if next_tick is not None:
                sleep = min(sleep, max(0.0, (next_tick - self._clock.now_ms()) / 1000))
            self._wakeup.clear()
            if sleep > 0:
                await wait_event(self._wakeup, sleep)
            else:
                await asyncio.sleep(0)

    async def tick(self, now_ms: int) -> int:
        """Release every task due at `now_ms` to the ready queue, in due order, and
        stage those due within the queue's `stage_ahead_ms`. If the queue fails, what
        it took stays handed over and the rest is handed over first at the next tick."""
        due, self._unreleased = self._unreleased, []
        merge = len(due) > 0 or len(self._wheels) > 1
        until = now_ms + self._stage_ahead_ms
        for partition, wheel in self._wheels.items():
            popped = wheel.pop_due(until)
            if popped and popped[-1][1] > now_ms:
                popped = self._hold_early_cron(partition, popped, now_ms)
            due.extend(popped)
        if self._early_cron:
            due.extend(self._take_early_cron(now_ms))
            merge = True
        if merge:
            due.sort(key=itemgetter(1))  # merge the partitions' runs, each already sorted
        cron: list[tuple[Route, int]] = []
        handed = 0
        try:
            for chunk in _chunks(due, now_ms):
                await self._release(chunk, cron, now_ms)
                handed += len(chunk)
                self._advance(due, handed, now_ms)
        except Exception:
            # The queue is unreachable: what it did not take is released first at the
            # next tick, not left to the reconciler; what it took is not pushed again.
            self._unreleased = due[handed:]
            raise
        finally:
            self._advance(due, handed, now_ms)
            if cron:  # even when a later push failed: these instances left the wheel
                self._resolve_cron(cron)
            self.released += handed
        return handed

    def _advance(self, due: list[tuple[int, int]], handed: int, now_ms: int) -> None:
        """Set the watermarks to `now_ms` and to the end of the stage window, but below
        the first task of `due` (sorted by due time) past the `handed` first: a task
        the queue did not take is neither `ready` nor counted as handed over. (This
        may set them back; the store keeps the highest it was told.)"""
        triggered, staged = now_ms, now_ms + self._stage_ahead_ms
        if handed < len(due):
            before = due[handed][1] - 1
            triggered, staged = min(triggered, before), min(staged, before)
        self.triggered_until, self.handed_until = triggered, staged

    async def close(self) -> None:
        """Stop resolving cron instances: those not yet advanced stay pending in the
        store, and the next owner releases them again."""
        for task in list(self._cron_tasks):
            task.cancel()
        await asyncio.gather(*self._cron_tasks, return_exceptions=True)

    def _resolve_cron(self, cron: list[tuple[Route, int]]) -> None:
        """Cron instances wait for their schedule to advance (and for the overlap check)
        before they reach the queue; the rest of the tick does not wait."""
        task = asyncio.create_task(self._on_cron(cron, self._clock.now_ms()))
        self._cron_tasks.add(task)
        task.add_done_callback(self._cron_tasks.discard)

    def _hold_early_cron(
        self, partition: int, popped: list[tuple[int, int]], now_ms: int
    ) -> list[tuple[int, int]]:
        """Keep back the cron instances of `popped` not due yet; return the rest."""
        is_cron = self._keys.is_cron
        kept: list[tuple[int, int]] = []
        for entry in popped:
            key, due_ms = entry
            if due_ms > now_ms and is_cron(key):
                heapq.heappush(self._early_cron.setdefault(partition, []), (due_ms, key))
            else:
                kept.append(entry)
        return kept

    def _take_early_cron(self, now_ms: int) -> list[tuple[int, int]]:
        taken: list[tuple[int, int]] = []
        for partition, heap in list(self._early_cron.items()):
            while heap and heap[0][0] <= now_ms:
                due_ms, key = heapq.heappop(heap)
                taken.append((key, due_ms))
            if not heap:
                del self._early_cron[partition]
        return taken

    async def _release(
        self, chunk: list[tuple[int, int]], cron: list[tuple[Route, int]], tick_ms: int
    ) -> None:
        """Push one chunk of tasks due at the tick, stamped with the time it is pushed,
        and add its cron instances to `cron` once the push succeeded; or stage one chunk
        of tasks not due yet, which the queue shows from their due time, so that is
        their release stamp unless the push itself comes later. Then let workers run:
        a large bucket reaches them chunk by chunk instead of all at the end."""
        route = self._keys.route
        now_ms = self._clock.now_ms()
        staging = chunk[0][1] > tick_ms  # a chunk is all due at the tick, or all ahead
        items: list[ReadyItem] = []
        fired: list[tuple[Route, int]] = []
        for key, due_ms in chunk:
            r = route(key)
            if staging:
                items.append(ReadyItem(r.seq, r.queue, r.priority, due_ms, max(due_ms, now_ms)))
            elif r.is_cron:
                fired.append((r, due_ms))
            else:
                items.append(ReadyItem(r.seq, r.queue, r.priority, due_ms, now_ms))
        if items:
            await (self._queue.stage if staging else self._queue.push)(items)
            self._metrics.released(items)
            if self._on_released is not None:
                self._on_released(items)
        cron += fired
        await asyncio.sleep(0)


def _chunks(due: list[tuple[int, int]], tick_ms: int) -> Iterator[list[tuple[int, int]]]:
    """`due` (sorted by due time) in chunks of at most `RELEASE_CHUNK`: first those due
    at `tick_ms`, then those to stage, so each chunk is one call to the queue."""
    ahead = bisect.bisect_right(due, tick_ms, key=itemgetter(1))
    for first, end in ((0, ahead), (ahead, len(due))):
        for start in range(first, end, RELEASE_CHUNK):
            yield due[start : min(start + RELEASE_CHUNK, end)]


def spans(numbers: Collection[int]) -> str:
    """`{0, 1, 2, 5, 7, 8}` as "0-2, 5, 7-8": a log line that stays short."""
    spans: list[list[int]] = []
    for n in sorted(numbers):
        if spans and n == spans[-1][1] + 1:
            spans[-1][1] = n
        else:
            spans.append([n, n])
    return ", ".join(str(a) if a == b else f"{a}-{b}" for a, b in spans)
