"""The old address of `Node`, kept only for the benchmarks' harnesses until they leave
the package (issue 15): the composition root is `tickwheel.node`, above the engine.

Nothing in the package imports this module, and it imports the root only when `Node`
is asked for, so the engine never loads the root.
"""

from __future__ import annotations

from importlib import import_module
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from tickwheel.node import Node as Node


def __getattr__(name: str) -> Any:
    if name != "Node":
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    return import_module("tickwheel.node").Node
