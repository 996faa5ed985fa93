"""Rendezvous hashing of partitions among scheduler nodes."""

from __future__ import annotations

from tickwheel.engine.leases import fair_share

P = 256


def owners(alive: list[str]) -> dict[int, str]:
    split = {node: fair_share(node, alive, P) for node in alive}
    return {p: node for node, parts in split.items() for p in parts}


def test_every_partition_has_exactly_one_owner() -> None:
    alive = ["a", "b", "c"]
    split = [fair_share(node, alive, P) for node in alive]
    assert sum(len(s) for s in split) == P
    assert set().union(*split) == set(range(P))
    assert all(40 <= len(s) <= 130 for s in split)  # roughly a third each


def test_a_node_joining_takes_only_its_share() -> None:
    before = owners(["a", "b", "c"])
    after = owners(["a", "b", "c", "d"])
    moved = [p for p in range(P) if before[p] != after[p]]
    assert all(after[p] == "d" for p in moved)  # nothing moves between the old nodes
    assert 30 <= len(moved) <= 100  # about a quarter


def test_a_node_leaving_gives_only_its_own() -> None:
    before = owners(["a", "b", "c"])
    after = owners(["a", "c"])
    assert all(before[p] == "b" for p in range(P) if before[p] != after[p])


def test_alone_a_node_owns_everything() -> None:
    assert fair_share("only", ["only"], P) == set(range(P))
    assert fair_share("new", [], 8) == set(range(8))  # not yet in the list it was given
