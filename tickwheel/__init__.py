"""Tickwheel: a job scheduler on a hierarchical timing wheel.

The public face. Everything not named here is internal.
"""

from tickwheel.config import Settings
from tickwheel.engine.node import Node
from tickwheel.errors import (
    Conflict,
    InvalidRequest,
    PermanentFailure,
    StaleFence,
    TaskNotFound,
    TickwheelError,
)
from tickwheel.models import Status, TaskOptions
from tickwheel.worker.context import TaskContext
from tickwheel.worker.registry import App

__all__ = [
    "App",
    "Conflict",
    "InvalidRequest",
    "Node",
    "PermanentFailure",
    "Settings",
    "StaleFence",
    "Status",
    "TaskContext",
    "TaskNotFound",
    "TaskOptions",
    "TickwheelError",
]
