"""RoutingKeys: what a due task needs for routing survives the trip through one integer."""

from __future__ import annotations

from array import array

import pytest
from hypothesis import given
from hypothesis import strategies as st

from tickwheel.engine.routing import Route, RoutingKeys
from tickwheel.models import PRIORITY_MAX, PRIORITY_MIN

SEQ_MAX = (1 << 39) - 1  # the largest seq that leaves 24 bits for the tag in 63 bits
INT64_MAX = (1 << 63) - 1

seqs = st.one_of(
    st.integers(min_value=1, max_value=SEQ_MAX),
    st.sampled_from([1, 2, 2**31 - 1, 2**31, 2**32, SEQ_MAX - 1, SEQ_MAX]),
)
priorities = st.integers(min_value=PRIORITY_MIN, max_value=PRIORITY_MAX)
queue_names = st.text(min_size=1, max_size=64)


def test_priority_range_is_the_documented_one() -> None:
    assert (PRIORITY_MIN, PRIORITY_MAX) == (-100, 100)


@given(seq=seqs, queue=queue_names, priority=priorities, is_cron=st.booleans())
def test_key_round_trips(seq: int, queue: str, priority: int, is_cron: bool) -> None:
    keys = RoutingKeys()
    assert keys.route(keys.key(seq, queue, priority, is_cron)) == Route(
        seq, queue, priority, is_cron
    )


@given(
    routes=st.lists(
        st.tuples(
            seqs,
            st.sampled_from(["default", "emails", "reports", "q:4"]),
            priorities,
            st.booleans(),
        ),
        min_size=1,
        max_size=50,
    )
)
def test_many_routes_round_trip_through_one_instance(
    routes: list[tuple[int, str, int, bool]],
) -> None:
    keys = RoutingKeys()
    packed = [keys.key(*route) for route in routes]
    assert [tuple(keys.route(key)) for key in packed] == routes


def test_every_priority_round_trips_at_the_largest_seq() -> None:
    keys = RoutingKeys()
    for priority in range(PRIORITY_MIN, PRIORITY_MAX + 1):
        for is_cron in (False, True):
            route = keys.route(keys.key(SEQ_MAX, "default", priority, is_cron))
            assert route == Route(SEQ_MAX, "default", priority, is_cron)


@given(seq=seqs, queue=queue_names, priority=priorities, is_cron=st.booleans())
def test_key_fits_a_signed_64_bit_slot(seq: int, queue: str, priority: int, is_cron: bool) -> None:
    key = RoutingKeys().key(seq, queue, priority, is_cron)
    assert 0 < key <= INT64_MAX
    assert array("q", [key])[0] == key  # the wheel stores keys in array('q')


def test_largest_key_fits_a_signed_64_bit_slot() -> None:
    keys = RoutingKeys()
    for index in range(1 << 15):  # the last queue index sets the tag's highest bits
        key = keys.key(SEQ_MAX, f"q{index}", PRIORITY_MAX, True)
    assert key <= INT64_MAX
    assert array("q", [key])[0] == key


@given(a=seqs, b=seqs, queue=queue_names, priority=priorities, is_cron=st.booleans())
def test_keys_of_one_queue_and_priority_sort_by_seq(
    a: int, b: int, queue: str, priority: int, is_cron: bool
) -> None:
    keys = RoutingKeys()
    key_a, key_b = keys.key(a, queue, priority, is_cron), keys.key(b, queue, priority, is_cron)
    assert (key_a < key_b) == (a < b)
    assert (key_a == key_b) == (a == b)


@pytest.mark.parametrize("seq", [0, -1, -(2**40), 1 << 39, 1 << 40, 2**63])
def test_out_of_range_seq_raises(seq: int) -> None:
    with pytest.raises(ValueError, match="out of range"):
        RoutingKeys().key(seq, "default", 0, False)


def test_distinct_queues_are_interned_apart() -> None:
    keys = RoutingKeys()
    first = keys.key(7, "emails", 3, False)
    second = keys.key(7, "reports", 3, False)
    assert first != second
    assert keys.route(first).queue == "emails"
    assert keys.route(second).queue == "reports"


def test_same_queue_reuses_its_interned_index() -> None:
    keys = RoutingKeys()
    first = keys.key(7, "emails", 3, False)
    keys.key(8, "reports", 3, False)
    assert keys.key(7, "emails", 3, False) == first


def test_queue_names_are_not_confused_by_similar_spelling() -> None:
    keys = RoutingKeys()
    names = ["a", "A", "a ", "ä", "default", "default2"]
    packed = {name: keys.key(1, name, 0, False) for name in names}
    assert len(set(packed.values())) == len(names)
    assert {name: keys.route(key).queue for name, key in packed.items()} == {
        name: name for name in names
    }


def test_queue_limit_is_enforced_after_the_last_index() -> None:
    keys = RoutingKeys()
    for index in range(1 << 15):
        keys.key(1, f"q{index}", 0, False)
    last = keys.key(SEQ_MAX, f"q{(1 << 15) - 1}", PRIORITY_MIN, False)
    assert keys.route(last) == Route(SEQ_MAX, f"q{(1 << 15) - 1}", PRIORITY_MIN, False)
    assert keys.key(2, "q0", 0, False) > 0  # known queues still work at the limit
    with pytest.raises(ValueError, match="too many distinct queues"):
        keys.key(1, "one-too-many", 0, False)
