"""Checking and ordering task graphs."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from tickwheel.core.dag import InvalidGraph, ordered


def test_a_diamond_is_ordered_with_each_task_after_what_it_waits_on() -> None:
    order = ordered({"d": ["b", "c"], "b": ["a"], "c": ["a"], "a": []})
    assert order[0] == "a" and order[-1] == "d"


@pytest.mark.parametrize(
    ("graph", "node", "words"),
    [
        ({}, None, "at least one"),
        ({"a": ["a"]}, "a", "itself"),
        ({"a": ["ghost"]}, "a", "'ghost'"),
        ({"a": ["c"], "b": ["a"], "c": ["b"]}, None, "cycle"),
    ],
)
def test_graphs_that_cannot_run_are_refused(
    graph: dict[str, list[str]], node: str | None, words: str
) -> None:
    with pytest.raises(InvalidGraph) as refused:
        ordered(graph)
    assert refused.value.node == node
    assert words in refused.value.reason


def test_a_cycle_is_named() -> None:
    with pytest.raises(InvalidGraph) as refused:
        ordered({"a": [], "b": ["a", "d"], "c": ["b"], "d": ["c"]})
    cycle = refused.value.reason.split(": ")[1].split(" -> ")
    assert cycle[0] == cycle[-1] and set(cycle) == {"b", "c", "d"}


@given(st.lists(st.lists(st.integers(0, 30), max_size=4), min_size=1, max_size=30))
def test_any_acyclic_graph_is_ordered(waits: list[list[int]]) -> None:
    # Task i may only wait on tasks before it: acyclic by construction.
    graph = {f"t{i}": [f"t{j}" for j in w if j < i] for i, w in enumerate(waits)}
    order = ordered(graph)
    position = {name: i for i, name in enumerate(order)}
    assert sorted(order) == sorted(graph)
    assert all(position[w] < position[n] for n, ws in graph.items() for w in ws)
