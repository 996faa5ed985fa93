"""Tickwheel's errors: one root, specific leaves whose docstring is the default message."""

from __future__ import annotations

from typing import Any


class TickwheelError(Exception):
    """Tickwheel failed."""

    def __init__(self, message: str | None = None) -> None:
        super().__init__(message or (self.__doc__ or "").strip())

    def __reduce__(self) -> tuple[Any, ...]:
        """Pickles whatever a subclass's constructor takes: the SQLite writer's process
        sends errors back to the store."""
        return _rebuilt, (type(self), self.args, self.__dict__)


def _rebuilt(kind: type[TickwheelError], args: tuple[Any, ...], state: dict[str, Any]) -> Any:
    error = kind.__new__(kind)
    error.args = args
    error.__dict__.update(state)
    return error


class InvalidRequest(TickwheelError, ValueError):
    """The request is invalid."""

    def __init__(self, field: str, message: str) -> None:
        super().__init__(f"{field}: {message}")
        self.field = field
        self.reason = message


class InvalidBatch(InvalidRequest):
    """Entries of a batch are invalid; nothing of it was stored."""

    def __init__(self, problems: list[tuple[int, InvalidRequest]]) -> None:
        index, first = problems[0]
        super().__init__(f"tasks.{index}.{first.field}", first.reason)
        self.problems = problems


class TaskNotFound(TickwheelError, LookupError):
    """No task has this id."""


class Conflict(TickwheelError):
    """The task is not in a state that allows this."""


class IdempotencyConflict(Conflict):
    """This idempotency key was used for a different request."""

    def __init__(self, message: str, task_id: str) -> None:
        super().__init__(message)
        self.task_id = task_id  # the task first made for the key

    @classmethod
    def of(cls, task_type: str, key: str, task_id: str) -> IdempotencyConflict:
        return cls(
            f"idempotency_key {key!r} of task type {task_type!r} was used for a different"
            f" request (task {task_id}); use a new key for a new request",
            task_id,
        )


class RejectedItems(TickwheelError):
    """Some items of a batch were refused; nothing of the batch was written."""

    def __init__(self, errors: dict[int, TickwheelError]) -> None:
        super().__init__(str(next(iter(errors.values()))))
        self.errors = errors


class StaleFence(TickwheelError):
    """The fence is stale: a newer attempt owns this task."""


class Overloaded(TickwheelError):
    """The ready queue is backed up: submit again later."""

    def __init__(self, retry_after_seconds: int, message: str | None = None) -> None:
        super().__init__(message)
        self.retry_after_seconds = retry_after_seconds


class Unauthorized(TickwheelError):
    """An API token is required, and none or an invalid one was given."""


class Forbidden(TickwheelError):
    """The API token lacks the scope this needs."""


class ServerError(TickwheelError):
    """The server failed to do this; it may succeed if tried again later."""

    def __init__(self, status: int, message: str | None = None, *, code: str | None = None) -> None:
        super().__init__(message)
        self.status = status
        self.code = code  # the answer's `error`: "store_unavailable", "storage_full", ...


class Unreachable(TickwheelError, ConnectionError):
    """The server cannot be reached."""


class StoreUnavailable(TickwheelError):
    """The store cannot be reached; nothing was changed."""

    code = "store_unavailable"  # the API's `error` for it, with a 503
    retry_after_seconds = 1


class StoreUnreachable(StoreUnavailable):
    """The store could not be connected to at all (not up yet, or away)."""

    code = "store_unreachable"


class QueueUnavailable(StoreUnavailable):
    """The ready queue (Redis) cannot be reached."""

    code = "queue_unavailable"


class MetricsUnavailable(StoreUnavailable):
    """The cluster's metrics (on Redis) cannot be reached."""

    code = "metrics_unavailable"


class StorageFull(StoreUnavailable):
    """The store's disk is full; nothing was changed."""

    code = "storage_full"
    retry_after_seconds = 5


class OutcomeUnknown(StoreUnavailable):
    """The store failed while committing: the change may or may not have been made."""

    code = "outcome_unknown"


class PermanentFailure(TickwheelError):
    """The task failed in a way no retry can fix."""


class MissingExtra(TickwheelError, ImportError):
    """A URL names a backend whose client library is not installed (an extra)."""


def describe(error: BaseException) -> str:
    """An error as a log line or a task's last error tells it: its type, and its
    message when it has one."""
    return f"{type(error).__name__}: {error}" if str(error) else type(error).__name__
