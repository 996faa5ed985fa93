"""A task's body as the engine's request: the one reading of a submission.

Whatever face a task came through, it is a body of the shape of `POST /api/tasks`: the
API validates the JSON into its `TaskIn`, and the embedded node writes its options with
`task_body` and reads them into `TaskBody`. `task_request` turns either into a
`TaskRequest`, the options the body leaves out taken from the task type's defaults.
Errors name the option at fault (`InvalidRequest("due_time", ...)`).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field, replace
from datetime import datetime
from typing import Any, Protocol, TypeVar

import msgspec

from tickwheel.clock import to_ms
from tickwheel.core import cron
from tickwheel.core.cron import CronSpec, MisfirePolicy, OverlapPolicy
from tickwheel.errors import InvalidRequest
from tickwheel.models import (
    MAX_EXPIRES_AFTER_SECONDS,
    ScheduleType,
    SubmitOptions,
    TaskOptions,
    reserved_name,
)
from tickwheel.wire.bodies import task_body

# -- what the engine is asked ---------------------------------------------------


@dataclass(frozen=True, slots=True)
class ScheduleRequest:
    type: ScheduleType
    due_ms: int | None = None
    delay_seconds: float | None = None
    cron: CronSpec | None = None
    misfire: MisfirePolicy = MisfirePolicy.RUN_ONCE
    overlap: OverlapPolicy = OverlapPolicy.ALLOW


@dataclass(frozen=True, slots=True)
class TaskRequest:
    task_type: str
    payload: Any = None
    schedule: ScheduleRequest = field(
        default_factory=lambda: ScheduleRequest(ScheduleType.IMMEDIATE)
    )
    options: TaskOptions = field(default_factory=TaskOptions)
    idempotency_key: str | None = None
    dependencies: tuple[str, ...] = ()  # task ids that must succeed first
    ordering_key: str | None = None  # one at a time per key, in due order
    # Chosen by the client (a UUID): a retry with the same id answers the task it made.
    task_id: str | None = None
    # Not started by then it ends expired: at a time, or this long after its due time.
    expires_at_ms: int | None = None
    expires_after_ms: int | None = None
    # The W3C trace context of its submission, with tracing on (not part of the body).
    traceparent: str | None = None
    limit_key: str | None = None  # shares the limits set for its key (scope `key`)


# -- what a body holds, whoever read it ------------------------------------------


class ScheduleFields(Protocol):
    @property
    def type(self) -> str: ...
    @property
    def due_time(self) -> datetime | None: ...
    @property
    def delay_seconds(self) -> float | None: ...
    @property
    def cron_expression(self) -> str | None: ...
    @property
    def timezone(self) -> str: ...
    @property
    def jitter_seconds(self) -> int: ...
    @property
    def misfire_policy(self) -> str | None: ...
    @property
    def overlap_policy(self) -> str | None: ...


class BackoffFields(Protocol):
    @property
    def base_seconds(self) -> float: ...
    @property
    def max_seconds(self) -> float: ...


class TaskFields(Protocol):
    @property
    def task_type(self) -> str: ...
    @property
    def payload(self) -> Any: ...
    @property
    def schedule(self) -> ScheduleFields: ...
    @property
    def queue(self) -> str | None: ...
    @property
    def priority(self) -> int | None: ...
    @property
    def max_retries(self) -> int | None: ...
    @property
    def retry_backoff(self) -> BackoffFields | None: ...
    @property
    def timeout_seconds(self) -> float | None: ...
    @property
    def idempotency_key(self) -> str | None: ...
    @property
    def dependencies(self) -> Sequence[str]: ...
    @property
    def ordering_key(self) -> str | None: ...
    @property
    def limit_key(self) -> str | None: ...
    @property
    def task_id(self) -> str | None: ...
    @property
    def expires_at(self) -> datetime | None: ...
    @property
    def expires_after_seconds(self) -> float | None: ...


# The embedded node's reading of a body: types only; the engine checks the limits.


class ScheduleBody(msgspec.Struct, frozen=True):
    type: str = "immediate"
    due_time: datetime | None = None
    delay_seconds: float | None = None
    cron_expression: str | None = None
    timezone: str = "UTC"
    jitter_seconds: int = 0
    misfire_policy: str | None = None
    overlap_policy: str | None = None


class BackoffBody(msgspec.Struct, frozen=True):
    base_seconds: float
    max_seconds: float


class TaskBody(msgspec.Struct, frozen=True):
    task_type: str
    payload: Any = None
    schedule: ScheduleBody = msgspec.field(default_factory=ScheduleBody)
    queue: str | None = None
    priority: int | None = None
    max_retries: int | None = None
    retry_backoff: BackoffBody | None = None
    timeout_seconds: float | None = None
    idempotency_key: str | None = None
    dependencies: tuple[str, ...] = ()
    ordering_key: str | None = None
    limit_key: str | None = None
    task_id: str | None = None
    expires_at: datetime | None = None
    expires_after_seconds: float | None = None


# -- the reading -----------------------------------------------------------------

TypeOptions = Callable[[str], TaskOptions]  # a task type's options by default
# The options already worked out for a batch, by what its tasks set.
Known = dict[tuple[Any, ...], TaskOptions]


def request_of(
    task_type: str, payload: Any, options: SubmitOptions, type_options: TypeOptions
) -> TaskRequest:
    """The request for a task submitted in Python with `options` (those of `submit`):
    written as the client would send it, and read as the API reads it."""
    body = _read(TaskBody, task_body(task_type, payload, **options))
    for name, value in (("task_type", body.task_type), ("queue", body.queue)):
        reason = reserved_name(**{name: value})  # the API's schemas refuse them too
        if reason is not None:
            raise InvalidRequest(name, reason)
    return task_request(body, type_options)


def schedule_of(options: SubmitOptions) -> ScheduleRequest:
    """The schedule `options` ask for (a recurring workflow's, say)."""
    return schedule_request(_read(ScheduleBody, task_body("", **options)["schedule"]))


B = TypeVar("B", TaskBody, ScheduleBody)


def _read(kind: type[B], body: dict[str, Any]) -> B:
    try:
        return msgspec.convert(body, kind)
    except msgspec.ValidationError as error:
        raise InvalidRequest(_option_at(str(error)), str(error).split(" - at ")[0]) from None


def task_request(
    body: TaskFields, type_options: TypeOptions, known: Known | None = None
) -> TaskRequest:
    """The engine's request for `body`, its options completed from its type's; `known`:
    the options already worked out for earlier tasks of the same batch."""
    backoff = body.retry_backoff
    given = (
        body.task_type,
        body.queue,
        body.priority,
        body.max_retries,
        backoff.base_seconds if backoff else None,
        backoff.max_seconds if backoff else None,
        body.timeout_seconds,
    )
    options = known.get(given) if known is not None else None
    if options is None:
        options = _completed(type_options(body.task_type), given)
        if known is not None:
            known[given] = options
    return TaskRequest(
        body.task_type,
        body.payload,
        schedule_request(body.schedule),
        options,
        body.idempotency_key,
        tuple(body.dependencies),
        body.ordering_key,
        body.task_id,
        *_expiry(body),
        limit_key=body.limit_key,
    )


def task_requests(bodies: Sequence[TaskFields], type_options: TypeOptions) -> list[TaskRequest]:
    """A batch's requests: a task type's options are worked out once per batch."""
    known: Known = {}
    return [task_request(body, type_options, known) for body in bodies]


def traced(requests: list[TaskRequest], traceparent: str | None) -> list[TaskRequest]:
    """`requests` carrying the trace context of their submission, when there is one."""
    if traceparent is None:
        return requests
    return [replace(r, traceparent=traceparent) for r in requests]


def _expiry(body: TaskFields) -> tuple[int | None, int | None]:
    """(expires_at, expires_after) in ms; whether they fit the task is the engine's to say."""
    at, after = body.expires_at, body.expires_after_seconds
    if at is not None and after is not None:
        raise InvalidRequest("expires_at", "give expires_at or expires_after_seconds, not both")
    if at is not None:
        try:
            return to_ms(at), None
        except ValueError as error:
            raise InvalidRequest("expires_at", str(error)) from None
    if after is not None:
        if not 0 < after <= MAX_EXPIRES_AFTER_SECONDS:  # NaN fails too
            raise InvalidRequest(
                "expires_after_seconds", f"must be > 0 and <= {MAX_EXPIRES_AFTER_SECONDS:g}"
            )
        return None, max(1, round(after * 1000))
    return None, None


_OPTION_NAMES = (
    "queue",
    "priority",
    "max_retries",
    "backoff_base_seconds",
    "backoff_max_seconds",
    "timeout_seconds",
)


def _completed(defaults: TaskOptions, given: tuple[Any, ...]) -> TaskOptions:
    """What a task sets (`given` after its type), else its type's defaults."""
    overrides = {k: v for k, v in zip(_OPTION_NAMES, given[1:], strict=True) if v is not None}
    return replace(defaults, **overrides) if overrides else defaults


def schedule_request(s: ScheduleFields) -> ScheduleRequest:
    """The engine's schedule for a body's `schedule`; the limits are the engine's to check."""
    if (
        s.type == ScheduleType.IMMEDIATE
        and s.misfire_policy in (None, MisfirePolicy.RUN_ONCE)
        and s.overlap_policy in (None, OverlapPolicy.ALLOW)
    ):
        return _RUN_NOW  # most tasks of a batch: one object for them all
    misfire = _choice(MisfirePolicy, "misfire_policy", s.misfire_policy)
    overlap = _choice(OverlapPolicy, "overlap_policy", s.overlap_policy)
    if s.type == ScheduleType.CRON and s.cron_expression is not None:
        try:
            spec = CronSpec(s.cron_expression, s.timezone, s.jitter_seconds)
        except ValueError as error:
            raise InvalidRequest(_cron_field(error), str(error)) from None
        return ScheduleRequest(ScheduleType.CRON, cron=spec, misfire=misfire, overlap=overlap)
    if s.type == ScheduleType.DELAYED:
        if s.due_time is not None:
            try:
                due_ms = to_ms(s.due_time)
            except ValueError as error:
                raise InvalidRequest("due_time", str(error)) from None
            return ScheduleRequest(ScheduleType.DELAYED, due_ms, None, None, misfire, overlap)
        return ScheduleRequest(ScheduleType.DELAYED, None, s.delay_seconds, None, misfire, overlap)
    return ScheduleRequest(ScheduleType(s.type), misfire=misfire, overlap=overlap)


_RUN_NOW = ScheduleRequest(ScheduleType.IMMEDIATE)


def _cron_field(error: ValueError) -> str:
    if isinstance(error, cron.UnknownTimezone):
        return "timezone"
    return "cron" if isinstance(error, cron.InvalidCronExpression) else "jitter_seconds"


E = TypeVar("E", MisfirePolicy, OverlapPolicy)


def _choice(kind: type[E], name: str, value: str | None) -> E:
    if isinstance(value, kind):  # read by the API's schemas already
        return value
    if value is None:
        return next(iter(kind))  # the first member is the default
    try:
        return kind(value)
    except ValueError:
        allowed = ", ".join(kind)
        raise InvalidRequest(name, f"{value!r} is not one of {allowed}") from None


def _option_at(message: str) -> str:
    """The option a body's type error is about: `$.schedule.cron_expression` is `cron`,
    `$.retry_backoff.base_seconds` is `retry_backoff`."""
    path = message.rpartition(" - at `$.")[2].rstrip("`").split(".")
    name = path[-1] if path[0] == "schedule" else path[0]
    return "cron" if name == "cron_expression" else name.partition("[")[0] or "body"
