"""Tickwheel: a job scheduler on a hierarchical timing wheel.

The public face. Everything not named here is internal.

The server's parts (`Node`, `Settings`, `App`, `TaskContext`) are imported on first use
(PEP 562), so a program that only uses `Client` or `AsyncClient` does not load the
engine, the API or their libraries.
"""

from __future__ import annotations

from importlib import import_module
from typing import TYPE_CHECKING, Any

from tickwheel.client import AsyncClient, Client
from tickwheel.errors import (
    Conflict,
    Forbidden,
    IdempotencyConflict,
    InvalidBatch,
    InvalidRequest,
    Overloaded,
    PermanentFailure,
    ServerError,
    StaleFence,
    TaskNotFound,
    TickwheelError,
    Unauthorized,
    Unreachable,
)
from tickwheel.models import ScheduleOptions, Status, SubmitOptions, TaskOptions
from tickwheel.workflow import Workflow

if TYPE_CHECKING:
    from tickwheel.config import Settings
    from tickwheel.node import Node
    from tickwheel.worker.context import TaskContext
    from tickwheel.worker.registry import App

_LAZY = {
    "App": "tickwheel.worker.registry",
    "Node": "tickwheel.node",
    "Settings": "tickwheel.config",
    "TaskContext": "tickwheel.worker.context",
}


def __getattr__(name: str) -> Any:
    """A server name, imported the first time it is asked for."""
    if name not in _LAZY:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    value = getattr(import_module(_LAZY[name]), name)
    globals()[name] = value  # asked once
    return value


def __dir__() -> list[str]:
    return sorted({*globals(), *__all__})


__all__ = [
    "App",
    "AsyncClient",
    "Client",
    "Conflict",
    "Forbidden",
    "IdempotencyConflict",
    "InvalidBatch",
    "InvalidRequest",
    "Node",
    "Overloaded",
    "PermanentFailure",
    "ScheduleOptions",
    "ServerError",
    "Settings",
    "StaleFence",
    "Status",
    "SubmitOptions",
    "TaskContext",
    "TaskNotFound",
    "TaskOptions",
    "TickwheelError",
    "Unauthorized",
    "Unreachable",
    "Workflow",
]
