"""Submitting tasks: checked, then committed, acknowledged only once stored.

Concurrent submissions share one commit (group commit), so durability costs one fsync
per batch. Tasks due now go to the ready queue straight after their commit.
"""

from __future__ import annotations

import hashlib
import json
import logging
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass, replace
from typing import Any

from tickwheel.clock import Clock
from tickwheel.core.retry import RetryPolicy
from tickwheel.engine.batcher import Batcher
from tickwheel.engine.reads import TaskReads
from tickwheel.engine.schedules import first_due_ms, instance_of
from tickwheel.engine.workforce import Workforce
from tickwheel.errors import (
    Conflict,
    IdempotencyConflict,
    InvalidBatch,
    InvalidRequest,
    RejectedItems,
)
from tickwheel.ids import is_canonical_uuid, new_id, partition_of
from tickwheel.models import (
    MAX_DELAY_SECONDS,
    MAX_DEPENDENCIES,
    MAX_LIMIT_KEY_LENGTH,
    MAX_ORDERING_KEY_LENGTH,
    MAX_TIMEOUT_SECONDS,
    PRIORITY_MAX,
    PRIORITY_MIN,
    Idempotency,
    NewTask,
    ScheduleRecord,
    ScheduleType,
    Status,
    TaskOptions,
)
from tickwheel.queue.base import ReadyItem
from tickwheel.storage.base import Held, Store
from tickwheel.wire.requests import ScheduleRequest, TaskRequest

log = logging.getLogger(__name__)

MAX_PAYLOAD_DEPTH = 64


def _request_hash(request: TaskRequest, encoded_payload: str) -> str:
    """What makes two submissions the same request (the key itself aside)."""
    s, o = request.schedule, request.options
    cron = (s.cron.expression, s.cron.timezone, s.cron.jitter_seconds) if s.cron else None
    parts: list[object] = [
        request.task_type,
        encoded_payload,
        [str(s.type), s.due_ms, s.delay_seconds, cron, str(s.misfire), str(s.overlap)],
        [o.queue, o.priority, o.max_retries, o.backoff_base_seconds, o.backoff_max_seconds],
        o.timeout_seconds,
        sorted(request.dependencies),
        request.ordering_key,
    ]
    if request.expires_at_ms is not None or request.expires_after_ms is not None:
        parts.append([request.expires_at_ms, request.expires_after_ms])  # old hashes stay
    if request.limit_key is not None:
        parts.append({"limit_key": request.limit_key})  # old hashes stay
    return hashlib.sha256(json.dumps(parts).encode()).hexdigest()


def _chosen_id(task_id: str) -> str:
    """A task id the client chose: a UUID in its canonical form, so that one id is
    always one text (a time-ordered UUIDv7 keeps the id index append-only)."""
    if not is_canonical_uuid(task_id):
        raise InvalidRequest(
            "task_id", "must be a UUID in canonical form (36 lowercase characters)"
        )
    return task_id


def _depth(value: Any) -> int:
    """How deeply JSON containers nest, without recursion (a hostile payload is deep)."""
    deepest, stack = 0, [(value, 1)]
    while stack:
        item, depth = stack.pop()
        if isinstance(item, dict | list):
            deepest = max(deepest, depth)
            if depth > MAX_PAYLOAD_DEPTH:
                break
            children = item.values() if isinstance(item, dict) else item
            stack.extend((child, depth + 1) for child in children)
    return deepest


def _check_options(options: TaskOptions) -> None:
    """The API checks these at its edge; the engine checks them again for embedded
    callers, since a bad retry policy would fail only when an attempt ends."""
    if not PRIORITY_MIN <= options.priority <= PRIORITY_MAX:  # keys pack it in 8 bits
        raise InvalidRequest("priority", f"must be from {PRIORITY_MIN} to {PRIORITY_MAX}")
    try:
        RetryPolicy(options.max_retries, options.backoff_base_seconds, options.backoff_max_seconds)
    except ValueError as error:
        field = "max_retries" if str(error).startswith("max_retries") else "retry_backoff"
        raise InvalidRequest(field, str(error)) from None
    timeout = options.timeout_seconds
    if timeout is not None and not 0 < timeout <= MAX_TIMEOUT_SECONDS:
        raise InvalidRequest("timeout_seconds", f"must be > 0 and <= {MAX_TIMEOUT_SECONDS:g}")


def _check_schedule(schedule: ScheduleRequest) -> None:
    delay = schedule.delay_seconds
    if delay is not None and not 0 <= delay <= MAX_DELAY_SECONDS:  # NaN fails too
        raise InvalidRequest("delay_seconds", f"must be from 0 to {MAX_DELAY_SECONDS:g}")


def _expires_ms(request: TaskRequest, due_ms: int) -> int | None:
    """When the task expires if it has not started: a time after its due time."""
    if request.expires_after_ms is not None:
        return due_ms + request.expires_after_ms
    at = request.expires_at_ms
    if at is not None and at <= due_ms:
        raise InvalidRequest("expires_at", "must be after the task's due time")
    return at


def _unregistered_type(task_type: str) -> InvalidRequest:
    return InvalidRequest(
        "task_type",
        f"no live worker has registered the task type {task_type!r} (strict_task_types)",
    )


def type_warning(task_type: str) -> str:
    """What a submitter is told of a task type no live worker has registered."""
    return (
        f"no live worker has registered the task type {task_type!r}: its tasks wait until"
        " one that does is running"
    )


def type_warnings(task_type: str, unregistered: set[str]) -> tuple[str, ...]:
    return (type_warning(task_type),) if task_type in unregistered else ()


@dataclass(frozen=True, slots=True)
class Submitted:
    task_id: str
    status: Status
    due_ms: int
    schedule_id: str | None = None
    duplicate: bool = False  # an idempotent repeat: the task first created for the key
    warnings: tuple[str, ...] = ()  # what the submitter should know: accepted all the same


class Submissions:
    def __init__(
        self,
        *,
        store: Store,
        clock: Clock,
        partitions: int,
        reads: TaskReads,
        on_committed: Callable[[], None] = lambda: None,
        check_payload: Callable[[str, Any], None] = lambda task_type, payload: None,
        push_ready: Callable[[list[ReadyItem]], Awaitable[None]] | None = None,
        workforce: Workforce | None = None,
        strict_task_types: bool = False,
        max_payload_bytes: int = 256 * 1024,
        idempotency_window_seconds: float = 86400.0,
    ) -> None:
        """`workforce`: who runs what, to warn of a task type no live worker has
        registered, or with `strict_task_types` to refuse it (422)."""
        self._store = store
        self._clock = clock
        self._partitions = partitions
        self._reads = reads
        self._on_committed = on_committed
        self._check_type_payload = check_payload
        # Tasks due now go from here to the ready queue, not through a scheduler's load.
        self._push_ready = push_ready
        self._workforce = workforce
        self._strict_task_types = strict_task_types
        self.max_payload_bytes = max_payload_bytes
        self.idempotency_window_ms = round(idempotency_window_seconds * 1000)
        self._inserts: Batcher[NewTask, Held] = Batcher(store.insert_tasks_with_holders)

    async def submit(self, request: TaskRequest) -> Submitted:
        if request.schedule.type is ScheduleType.CRON:
            return await self._submit_cron(request)
        try:
            (submitted,) = await self.submit_many([request])
        except InvalidBatch as batch:
            raise batch.problems[0][1] from None  # one task: name its own field
        return submitted

    async def submit_many(self, requests: Sequence[TaskRequest]) -> list[Submitted]:
        """Commit one-off tasks together, all or none: every invalid entry is reported
        in one `InvalidBatch` (a cron request here is invalid too)."""
        unregistered, problems = await self.check_task_types([r.task_type for r in requests])
        now = self._clock.now_ms()
        tasks, refused = [], {i for i, _ in problems}
        for index, request in enumerate(requests):
            if index in refused:
                continue
            try:
                tasks.append(self.new_task(request, now, push=True))
            except InvalidRequest as problem:
                problems.append((index, problem))
        if problems:
            raise InvalidBatch(sorted(problems, key=lambda p: p[0]))
        try:
            held = await self._inserts.submit_many(tasks)
        except RejectedItems as rejected:
            # An entry the store finds invalid (it waits on an id nobody has) is named like
            # one found invalid above, with every other such entry; `submit` unpacks one.
            invalid = [
                (i, e)
                for i, e in sorted(rejected.errors.items(), key=lambda item: item[0])
                if isinstance(e, InvalidRequest)
            ]
            if invalid:
                raise InvalidBatch(invalid) from None
            index, error = next(iter(rejected.errors.items()))
            if len(tasks) == 1:
                raise error from None
            if isinstance(error, IdempotencyConflict):
                raise IdempotencyConflict(f"tasks.{index}: {error}", error.task_id) from None
            raise Conflict(f"tasks.{index}: {error}") from None
        if not all(t.direct for t in tasks):
            self._on_committed()
        await self._push_direct(tasks, held, now)
        # Each as stored: blocked while it waits on predecessors, pending otherwise.
        submitted = [
            Submitted(t.task_id, h.status or Status.PENDING, t.due_ms)
            for t, h in zip(tasks, held, strict=True)
        ]
        repeats = [i for i, h in enumerate(held) if h.repeat]
        if repeats:
            await self._point_repeats_at_originals(submitted, held, repeats)
        if unregistered:
            submitted = [
                replace(s, warnings=type_warnings(t.task_type, unregistered))
                for s, t in zip(submitted, tasks, strict=True)
            ]
        return submitted

    async def check_task_types(
        self, task_types: Sequence[str]
    ) -> tuple[set[str], list[tuple[int, InvalidRequest]]]:
        """The task types no live worker has registered (read at most once a second),
        and with `strict_task_types` the entries (by index) refused for naming one."""
        if self._workforce is None:
            return set(), []
        unregistered = await self._workforce.unregistered(set(task_types))
        if not self._strict_task_types:
            return unregistered, []
        named = enumerate(task_types)
        return unregistered, [(i, _unregistered_type(t)) for i, t in named if t in unregistered]

    async def _push_direct(self, tasks: list[NewTask], held: list[Held], now_ms: int) -> None:
        """Hand the new tasks due now to the ready queue. They are committed already: if
        the push fails, or this process dies before it, they are overdue and unclaimed,
        and the reconciler of their partition releases them."""
        items = [
            ReadyItem(h.seq, t.options.queue, t.options.priority, t.due_ms, now_ms)
            for t, h in zip(tasks, held, strict=True)
            if t.direct and not h.repeat
        ]
        if not items or self._push_ready is None:
            return
        try:
            await self._push_ready(items)
        except Exception:
            log.warning(
                "%d tasks due now are stored but could not be queued; the reconciler will"
                " release them",
                len(items),
                exc_info=True,
            )

    async def _point_repeats_at_originals(
        self, submitted: list[Submitted], held: list[Held], repeats: list[int]
    ) -> None:
        """The store answered a repeated key with the original task: answer with that
        task, as it is now."""
        records = await self._store.get_tasks({held[i].seq for i in repeats})
        views = {v.record.seq: v for v in await self._reads.views(records) if v.record}
        for i in repeats:
            view = views[held[i].seq]
            if view.record is not None:
                submitted[i] = Submitted(
                    view.task_id, view.status, view.record.due_ms, duplicate=True
                )

    def new_task(
        self, request: TaskRequest, now_ms: int, task_id: str | None = None, *, push: bool = False
    ) -> NewTask:
        """The task to store for `request`; raises InvalidRequest naming the field at fault.
        `push`: the caller hands it to the ready queue after the commit if it is due now."""
        encoded = self._check(request)
        request_hash = None
        if request.idempotency_key is not None or request.task_id is not None:
            request_hash = _request_hash(request, encoded)
        idempotency = self._idempotency(request, request_hash, now_ms)
        schedule = request.schedule
        if schedule.type is ScheduleType.CRON:
            raise InvalidRequest(
                "schedule.type", "cron tasks are submitted one at a time (POST /api/tasks)"
            )
        if len(request.dependencies) > MAX_DEPENDENCIES:
            raise InvalidRequest("dependencies", f"at most {MAX_DEPENDENCIES} task ids")
        due = now_ms
        if schedule.type is ScheduleType.DELAYED:
            if schedule.due_ms is not None:
                # A due time already past means now: the task is due when accepted, and
                # its lateness counts from then, not from a date years ago.
                due = max(schedule.due_ms, now_ms)
            elif schedule.delay_seconds is not None:
                due = now_ms + round(schedule.delay_seconds * 1000)
            else:
                raise InvalidRequest("schedule", "a delayed task needs due_time or delay_seconds")
        if request.task_id is not None:
            if task_id is not None:
                raise InvalidRequest("task_id", "a workflow's tasks are named, not given ids")
            task_id = _chosen_id(request.task_id)
        task_id = task_id or new_id()
        return NewTask(
            task_id=task_id,
            partition=partition_of(task_id, self._partitions),
            task_type=request.task_type,
            payload=request.payload,
            schedule_type=schedule.type,
            due_ms=due,
            created_ms=now_ms,
            options=request.options,
            encoded_payload=encoded,
            idempotency=idempotency,
            predecessors=request.dependencies,
            ordering_key=request.ordering_key,
            limit_key=request.limit_key,
            request_hash=request_hash if request.task_id is not None else None,
            expires_ms=_expires_ms(request, due),
            traceparent=request.traceparent,
            direct=push
            and self._push_ready is not None
            and due <= now_ms
            and not request.dependencies
            and request.ordering_key is None,
        )

    async def _submit_cron(self, request: TaskRequest) -> Submitted:
        encoded = self._check(request)
        unregistered, refused = await self.check_task_types([request.task_type])
        if refused:
            raise refused[0][1]
        warnings = type_warnings(request.task_type, unregistered)
        if request.dependencies:
            raise InvalidRequest("dependencies", "a cron task cannot wait on other tasks")
        if request.ordering_key is not None:
            raise InvalidRequest(
                "ordering_key", "a cron schedule orders its own instances (overlap_policy)"
            )
        if request.limit_key is not None:
            # A schedule stores no limit key for the instances it makes.
            raise InvalidRequest(
                "limit_key",
                "a cron task's instances cannot take a limit key yet; limit its task type or queue",
            )
        cron = request.schedule.cron
        if cron is None:
            raise InvalidRequest("schedule.cron_expression", "a cron task needs an expression")
        if request.expires_at_ms is not None:
            raise InvalidRequest(
                "expires_at", "a cron task's instances expire by expires_after_seconds"
            )
        now = self._clock.now_ms()
        schedule = ScheduleRecord(
            schedule_id=new_id(),
            task_type=request.task_type,
            payload=request.payload,
            options=request.options,
            cron_expression=cron.expression,
            timezone=cron.timezone,
            jitter_seconds=cron.jitter_seconds,
            misfire_policy=str(request.schedule.misfire),
            overlap_policy=str(request.schedule.overlap),
            status="active",
            version=0,
            current_seq=None,
            previous_seq=None,
            created_ms=now,
            expires_after_ms=request.expires_after_ms,
        )
        first = instance_of(schedule, first_due_ms(schedule, now), now, self._partitions)
        if request.task_id is not None:
            raise InvalidRequest(
                "task_id", "a cron task's id is its schedule's: give an idempotency_key"
            )
        request_hash = _request_hash(request, encoded) if request.idempotency_key else None
        first = replace(first, idempotency=self._idempotency(request, request_hash, now))
        try:
            holder = await self._store.insert_schedule(schedule, first)
        except RejectedItems as rejected:
            raise next(iter(rejected.errors.values())) from None
        if holder != schedule.schedule_id:
            view = await self._reads.get(holder)
            due = view.record.due_ms if view.record else first.due_ms
            return Submitted(holder, view.status, due, holder, True, warnings)
        self._on_committed()
        return Submitted(
            schedule.schedule_id,
            Status.PENDING,
            first.due_ms,
            schedule.schedule_id,
            False,
            warnings,
        )

    def _idempotency(
        self, request: TaskRequest, request_hash: str | None, now_ms: int
    ) -> Idempotency | None:
        if request.idempotency_key is None or request_hash is None:
            return None
        return Idempotency(
            request.idempotency_key, request_hash, now_ms - self.idempotency_window_ms
        )

    def _check(self, request: TaskRequest) -> str:
        """Raise InvalidRequest naming the field at fault; return the encoded payload."""
        encoded = self._encode_payload(request.payload)
        self._check_type_payload(request.task_type, request.payload)
        _check_options(request.options)
        _check_schedule(request.schedule)
        key = request.ordering_key
        if key is not None and not 0 < len(key) <= MAX_ORDERING_KEY_LENGTH:
            raise InvalidRequest("ordering_key", f"1 to {MAX_ORDERING_KEY_LENGTH} characters")
        limit_key = request.limit_key
        if limit_key is not None and not 0 < len(limit_key) <= MAX_LIMIT_KEY_LENGTH:
            raise InvalidRequest("limit_key", f"1 to {MAX_LIMIT_KEY_LENGTH} characters")
        return encoded

    def _encode_payload(self, payload: Any) -> str:
        try:
            encoded = json.dumps(payload, ensure_ascii=False)
            size = len(encoded.encode())
        except UnicodeEncodeError:
            raise InvalidRequest(
                "payload", "text must be valid Unicode (a lone surrogate?)"
            ) from None
        except (TypeError, ValueError, RecursionError):
            raise InvalidRequest("payload", "not JSON, or nested too deep") from None
        if size > self.max_payload_bytes:
            raise InvalidRequest(
                "payload", f"{size} bytes is more than the limit of {self.max_payload_bytes}"
            )
        # Counting brackets is cheap; the exact (slower) depth walk runs only when needed.
        deep = encoded.count("[") + encoded.count("{") > MAX_PAYLOAD_DEPTH
        if deep and _depth(payload) > MAX_PAYLOAD_DEPTH:
            raise InvalidRequest("payload", f"nested deeper than {MAX_PAYLOAD_DEPTH} levels")
        return encoded
