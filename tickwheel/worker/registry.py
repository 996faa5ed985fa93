"""Task handlers, registered with a decorator on an `App` that needs no connection.

An `App` is bound to a worker later (`tickwheel up --app module:app`), so importing
a module of handlers never connects to anything.
"""

from __future__ import annotations

import inspect
import re
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, TypeVar

from tickwheel.core.limits import Limit, Rate
from tickwheel.core.limits import Scope as LimitScope
from tickwheel.worker.context import TaskContext

Handler = Callable[[TaskContext, Any], Any]
PayloadCheck = Callable[[Any], None]
F = TypeVar("F", bound=Handler)

TASK_TYPE = re.compile(r"^[A-Za-z0-9_.:\-]{1,128}$")


@dataclass(frozen=True, slots=True)
class TaskType:
    name: str
    handler: Handler
    is_async: bool
    max_retries: int | None = None
    backoff_base_seconds: float | None = None
    backoff_max_seconds: float | None = None
    timeout_seconds: float | None = None
    check_payload: PayloadCheck | None = None
    limit: Limit | None = None  # declared cluster-wide when a worker with it starts


@dataclass
class App:
    """A registry of task handlers."""

    types: dict[str, TaskType] = field(default_factory=dict)

    def task(
        self,
        name: str | None = None,
        *,
        max_retries: int | None = None,
        retry_backoff: tuple[float, float] | None = None,
        timeout_seconds: float | None = None,
        check_payload: PayloadCheck | None = None,
        rate_limit: str | None = None,
        concurrency: int | None = None,
    ) -> Callable[[F], F]:
        """Register a handler `fn(ctx, payload)`; plain functions run in a thread pool.

        `retry_backoff` is (base_seconds, max_seconds); these are the defaults for tasks
        of this type that do not set their own. `rate_limit` ("100/s") and `concurrency`
        limit the type's starts and running tasks across the cluster: a worker with this
        type sets that limit when it starts (`PUT /api/limits/task_type/NAME` does the
        same for a type without them)."""

        def register(fn: F) -> F:
            default = f"{fn.__module__}.{getattr(fn, '__qualname__', type(fn).__qualname__)}"
            type_name = default if name is None else name
            if not TASK_TYPE.fullmatch(type_name):
                raise ValueError(f"task type {type_name!r} must match {TASK_TYPE.pattern}")
            base, cap = retry_backoff or (None, None)
            limit = None
            if rate_limit is not None or concurrency is not None:
                rate = None if rate_limit is None else Rate.parse(rate_limit)
                limit = Limit(LimitScope.TASK_TYPE, type_name, rate, concurrency)
            self.types[type_name] = TaskType(
                name=type_name,
                handler=fn,
                is_async=_is_async(fn),
                max_retries=max_retries,
                backoff_base_seconds=base,
                backoff_max_seconds=cap,
                timeout_seconds=timeout_seconds,
                check_payload=check_payload,
                limit=limit,
            )
            return fn

        return register

    def get(self, name: str) -> TaskType | None:
        return self.types.get(name)

    def merged(self, other: App) -> App:
        return App({**self.types, **other.types})


def _is_async(fn: Handler) -> bool:
    """A coroutine function, or an object whose `__call__` is one."""
    call = getattr(fn, "__call__", None)  # noqa: B004
    return inspect.iscoroutinefunction(fn) or inspect.iscoroutinefunction(call)
