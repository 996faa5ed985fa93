"""Task graphs: check one and put it in an order where every task follows its
dependencies. Pure: names in, names out."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from graphlib import CycleError, TopologicalSorter


class InvalidGraph(ValueError):
    """The graph cannot run: `node` (a name, or None for the whole graph) is at fault."""

    def __init__(self, node: str | None, reason: str) -> None:
        super().__init__(reason)
        self.node = node
        self.reason = reason


def ordered(dependencies: Mapping[str, Sequence[str]]) -> list[str]:
    """The names of `dependencies` (name -> the names it waits on) with each after all
    it waits on. Raises InvalidGraph for an empty graph,
    an unknown name, a task waiting on itself, or a cycle (which it names)."""
    if not dependencies:
        raise InvalidGraph(None, "a workflow needs at least one task")
    for name, waits_on in dependencies.items():
        for other in waits_on:
            if other == name:
                raise InvalidGraph(name, f"{name!r} cannot depend on itself")
            if other not in dependencies:
                raise InvalidGraph(name, f"{name!r} depends on {other!r}, which is not in it")
    sorter = TopologicalSorter({name: list(waits) for name, waits in dependencies.items()})
    try:
        found = list(sorter.static_order())
    except CycleError as error:
        cycle = list(reversed(error.args[1]))
        raise InvalidGraph(None, "the dependencies form a cycle: " + " -> ".join(cycle)) from None
    return found
