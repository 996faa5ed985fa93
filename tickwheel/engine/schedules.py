"""The cron resolver: when a schedule's instance is triggered, create the next one.

A schedule keeps exactly one future instance. Advancing it is a compare-and-set on
the schedule's version, so two releases of the same instance create one next instance,
not two; and it presents this node's lease on the fired instance's partition, so a node
whose lease was taken over (and has not noticed yet) advances nothing and pushes
nothing. Misfire and overlap policies are applied here.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable, Iterable, Mapping, Sequence

from tickwheel.clock import Clock, to_datetime, to_ms
from tickwheel.core.cron import CronSpec, MisfirePolicy, OverlapPolicy, next_fire
from tickwheel.engine.routing import Route
from tickwheel.ids import new_id, partition_of
from tickwheel.metrics.recorder import Recorder
from tickwheel.models import WORKFLOW_TASK_TYPE, NewTask, ScheduleRecord, ScheduleType, Status
from tickwheel.outage import log_failure
from tickwheel.queue.base import ReadyItem, ReadyQueue
from tickwheel.storage.base import Advance, Fence, ScheduleStore, TaskStore

log = logging.getLogger(__name__)

# An instance released later than this after its due time counts as misfired.
MISFIRE_GRACE_MS = 60_000


def spec_of(schedule: ScheduleRecord) -> CronSpec:
    return CronSpec(schedule.cron_expression, schedule.timezone, schedule.jitter_seconds)


def first_due_ms(schedule: ScheduleRecord, now_ms: int) -> int:
    moment = to_datetime(now_ms)
    assert moment is not None
    return to_ms(next_fire(spec_of(schedule), moment, schedule_key=schedule.schedule_id))


def expiry_of(schedule: ScheduleRecord, due_ms: int) -> int | None:
    """An instance due at `due_ms` expires its schedule's expiry after that, if it has one."""
    after = schedule.expires_after_ms
    return None if after is None else due_ms + after


def instance_of(schedule: ScheduleRecord, due_ms: int, now_ms: int, partitions: int) -> NewTask:
    task_id = new_id()
    return NewTask(
        task_id=task_id,
        partition=partition_of(task_id, partitions),
        task_type=schedule.task_type,
        payload=schedule.payload,
        schedule_type=ScheduleType.CRON,
        due_ms=due_ms,
        created_ms=now_ms,
        options=schedule.options,
        schedule_id=schedule.schedule_id,
        expires_ms=expiry_of(schedule, due_ms),
    )


class CronResolver:
    def __init__(
        self,
        *,
        store: ScheduleStore,
        tasks: TaskStore,
        queue: ReadyQueue,
        clock: Clock,
        partitions: int,
        fence: Callable[[int], Fence | None],
        on_created: Callable[[], None],
        metrics: Recorder | None = None,
    ) -> None:
        self._store = store
        self._metrics = metrics or Recorder(clock)
        self._tasks = tasks
        self._queue = queue
        self._clock = clock
        self._partitions = partitions
        self._fence = fence  # the lease this node holds on a partition, if any
        self._on_created = on_created

    async def on_triggered(self, instances: Sequence[tuple[Route, int]], now_ms: int) -> None:
        """Advance the schedules of released instances, then queue the instances. Until
        that succeeds they wait (pending in the store, so a restart releases them again)."""
        delay = 1.0
        while True:
            try:
                await self._advance(instances, now_ms)
                return
            except Exception as error:
                log_failure(
                    log,
                    error,
                    "advancing %d schedules failed; again in %.0f s",
                    len(instances),
                    delay,
                )
            await asyncio.sleep(delay)
            delay = min(delay * 2, 60.0)

    async def _advance(self, instances: Sequence[tuple[Route, int]], now_ms: int) -> None:
        # A wheel may hold an instance twice; both copies would race for one advance.
        instances = list({route.seq: (route, due) for route, due in instances}.values())
        schedules = await self._store.schedules_of([route.seq for route, _ in instances])
        fences = await self._fences(schedules)
        busy = await self._still_running(schedules.values())
        advances: list[Advance] = []
        released: list[ReadyItem] = []
        for route, due_ms in instances:
            item = ReadyItem(route.seq, route.queue, route.priority, due_ms, now_ms)
            schedule = schedules.get(route.seq)
            if schedule is None:
                released.append(item)  # not current any more: the claim decides
                continue
            fence = fences.get(route.seq)
            if fence is None:  # the lease was lost since the wheel released the instance
                log.info(
                    "instance %d not fired here: its partition's next owner fires it", route.seq
                )
                continue
            advance = self._advance_past(schedule, route.seq, due_ms, now_ms, busy, fence)
            if advance is not None:
                advances.append(advance)
            if advance is None or advance.skip is None:
                released.append(item)
        await self._commit(advances, released)

    async def _commit(self, advances: Sequence[Advance], released: Sequence[ReadyItem]) -> None:
        """Advance the schedules, then push the instances whose advance was not refused."""
        results = await self._store.advance_schedules(advances) if advances else []
        lost = {
            a.schedule.current_seq for a, seq in zip(advances, results, strict=True) if seq is None
        }
        if lost:
            log.info(
                "instances %s not pushed: their schedule had moved on, or this node's lease"
                " on their partition was stale",
                lost,
            )
        pushed = [i for i in released if i.seq not in lost]
        await self._queue.push(pushed)
        self._metrics.released(pushed)
        for advance, seq in zip(advances, results, strict=True):
            if seq is not None:
                log.debug(
                    "schedule %s fired (instance %d), next instance %d",
                    advance.schedule.schedule_id,
                    advance.schedule.current_seq,
                    seq,
                    extra={"task_id": advance.schedule.schedule_id},
                )
        if len(lost) < len(advances):
            self._on_created()  # a next instance to load

    def _advance_past(
        self,
        schedule: ScheduleRecord,
        seq: int,
        due_ms: int,
        now_ms: int,
        busy: set[int],
        fence: Fence,
    ) -> Advance | None:
        """The advance past instance `seq`, or None when the schedule never fires again."""
        late = now_ms - due_ms > MISFIRE_GRACE_MS
        misfire = MisfirePolicy(schedule.misfire_policy)
        skip = None
        if late and misfire is MisfirePolicy.SKIP:
            skip = (seq, "skipped: misfired after downtime (misfire_policy skip)")
        elif schedule.overlap_policy == OverlapPolicy.SKIP and schedule.previous_seq in busy:
            skip = (seq, "skipped: the previous instance was still running")
        # After downtime run once (or not at all), then carry on from now; RUN_ALL
        # walks through every missed slot instead.
        after = due_ms if not late or misfire is MisfirePolicy.RUN_ALL else now_ms
        try:
            nxt = instance_of(schedule, first_due_ms(schedule, after), now_ms, self._partitions)
        except ValueError:  # an expression that never fires again ends its schedule
            log.exception(
                "schedule %s has no next fire time",
                schedule.schedule_id,
                extra={"task_id": schedule.schedule_id},
            )
            return None
        return Advance(schedule, nxt, skip, fence)

    async def _fences(self, schedules: Mapping[int, ScheduleRecord]) -> dict[int, Fence]:
        """Instance seq -> the lease on its partition that its advance presents, for the
        instances of partitions this node still holds."""
        if not schedules:
            return {}
        fences = {
            t.seq: self._fence(t.partition) for t in await self._tasks.get_tasks(list(schedules))
        }
        return {seq: fence for seq, fence in fences.items() if fence is not None}

    async def _still_running(self, schedules: Iterable[ScheduleRecord]) -> set[int]:
        previous = [
            s.previous_seq
            for s in schedules
            if s.overlap_policy == OverlapPolicy.SKIP and s.previous_seq is not None
        ]
        if not previous:
            return set()
        tasks = await self._tasks.get_tasks(previous)
        busy = {t.seq for t in tasks if t.status in (Status.PENDING, Status.RUNNING)}
        # A recurring workflow's instance ends when it has launched its workflow: the
        # run still goes on while that workflow does (its id is the instance's).
        launched = {t.task_id: t.seq for t in tasks if t.task_type == WORKFLOW_TASK_TYPE}
        if launched:
            active = await self._tasks.active_workflows(launched)
            busy.update(launched[workflow_id] for workflow_id in active)
        return busy
