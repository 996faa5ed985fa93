"""Tickwheel's errors: one root, specific leaves whose docstring is the default message."""

from __future__ import annotations


class TickwheelError(Exception):
    """Tickwheel failed."""

    def __init__(self, message: str | None = None) -> None:
        super().__init__(message or (self.__doc__ or "").strip())


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


class StaleFence(TickwheelError):
    """The fence is stale: a newer attempt owns this task."""


class Conflict(TickwheelError):
    """The task is not in a state that allows this."""


class StoreUnavailable(TickwheelError):
    """The store cannot be reached."""


class PermanentFailure(TickwheelError):
    """The task failed in a way no retry can fix."""
