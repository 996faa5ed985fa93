"""Tickwheel: a job scheduler on a hierarchical timing wheel.

The public face. Everything not named here is internal.
"""

from tickwheel.client import AsyncClient, Client
from tickwheel.config import Settings
from tickwheel.engine.node import Node
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
from tickwheel.worker.context import TaskContext
from tickwheel.worker.registry import App
from tickwheel.workflow import Workflow

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
