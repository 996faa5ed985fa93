from __future__ import annotations

import dataclasses
import math
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from tickwheel.core.retry import RetryPolicy

ALMOST_ONE = math.nextafter(1.0, 0.0)


def never_called() -> float:
    raise AssertionError("rand must not be called without jitter")


def test_defaults() -> None:
    policy = RetryPolicy()
    assert (policy.max_retries, policy.base_seconds, policy.max_seconds, policy.jitter) == (
        3,
        1.0,
        300.0,
        "full",
    )


def test_is_frozen() -> None:
    with pytest.raises(dataclasses.FrozenInstanceError):
        RetryPolicy().max_retries = 5  # type: ignore[misc]


# --- backoff cap ------------------------------------------------------------


def test_cap_doubles_then_clamps() -> None:
    policy = RetryPolicy(base_seconds=1.0, max_seconds=300.0)
    caps = [policy.backoff_cap(attempt) for attempt in range(1, 12)]
    assert caps == [1, 2, 4, 8, 16, 32, 64, 128, 256, 300, 300]


def test_cap_with_fractional_base() -> None:
    policy = RetryPolicy(base_seconds=0.25, max_seconds=1.5)
    assert [policy.backoff_cap(attempt) for attempt in range(1, 6)] == [0.25, 0.5, 1.0, 1.5, 1.5]


def test_cap_is_constant_when_base_equals_max() -> None:
    policy = RetryPolicy(base_seconds=30.0, max_seconds=30.0)
    assert {policy.backoff_cap(attempt) for attempt in (1, 2, 50)} == {30.0}


@pytest.mark.parametrize("attempt", [1_024, 1_025, 10**6, 10**9, 10**100])
def test_cap_never_overflows(attempt: int) -> None:
    assert RetryPolicy().backoff_cap(attempt) == 300.0


def test_tiny_base_still_reaches_the_cap() -> None:
    smallest = math.ulp(0.0)  # 2 ** -1074, the smallest positive float
    policy = RetryPolicy(base_seconds=smallest, max_seconds=7 * 86_400.0)
    assert policy.backoff_cap(1) == smallest
    assert policy.backoff_cap(10**6) == 7 * 86_400.0


@given(
    st.floats(min_value=1e-9, max_value=86_400.0),
    st.floats(min_value=1.0, max_value=7.0),
    st.integers(min_value=1, max_value=10**7),
)
def test_cap_is_positive_bounded_and_monotonic(base: float, ratio: float, attempt: int) -> None:
    policy = RetryPolicy(base_seconds=base, max_seconds=min(base * ratio * 86_400, 604_800.0))
    cap = policy.backoff_cap(attempt)
    assert 0 < cap <= policy.max_seconds
    assert policy.backoff_cap(attempt + 1) >= cap


@pytest.mark.parametrize("attempt", [0, -1])
def test_attempt_counts_from_one(attempt: int) -> None:
    policy = RetryPolicy()
    with pytest.raises(ValueError, match="attempt must be at least 1"):
        policy.backoff_cap(attempt)
    with pytest.raises(ValueError, match="attempt"):
        policy.delay(attempt, lambda: 0.5)


# --- delay ------------------------------------------------------------------


def test_full_jitter_bounds() -> None:
    policy = RetryPolicy(base_seconds=2.0, max_seconds=60.0)
    assert policy.delay(3, lambda: 0.0) == 0.0
    assert policy.delay(3, lambda: 0.5) == 4.0
    highest = policy.delay(3, lambda: ALMOST_ONE)
    assert 7.999 < highest < 8.0
    assert policy.delay(10**6, lambda: ALMOST_ONE) < 60.0


def test_no_jitter_is_the_cap_and_ignores_rand() -> None:
    policy = RetryPolicy(base_seconds=2.0, max_seconds=60.0, jitter="none")
    assert [policy.delay(attempt, never_called) for attempt in (1, 2, 3, 10)] == [2, 4, 8, 60]


@pytest.mark.parametrize("sample", [1.0, -0.1, math.nan])
def test_rand_outside_unit_interval_is_rejected(sample: float) -> None:
    with pytest.raises(ValueError, match="rand"):
        RetryPolicy().delay(1, lambda: sample)


@given(st.integers(min_value=1, max_value=10**6), st.floats(min_value=0.0, max_value=ALMOST_ONE))
def test_full_jitter_stays_below_the_cap(attempt: int, sample: float) -> None:
    policy = RetryPolicy()
    assert 0.0 <= policy.delay(attempt, lambda: sample) < policy.backoff_cap(attempt)


# --- should_retry -----------------------------------------------------------


def test_should_retry_boundaries() -> None:
    policy = RetryPolicy(max_retries=3)
    # attempts_made includes the attempt that just failed: 1 try + 3 retries in all.
    assert [policy.should_retry(made) for made in (1, 2, 3, 4, 5)] == [
        True,
        True,
        True,
        False,
        False,
    ]


def test_zero_retries_never_retries() -> None:
    assert RetryPolicy(max_retries=0).should_retry(1) is False


def test_max_retries_upper_bound() -> None:
    policy = RetryPolicy(max_retries=100)
    assert policy.should_retry(100)
    assert not policy.should_retry(101)


def test_attempts_made_counts_from_one() -> None:
    with pytest.raises(ValueError, match="attempts_made"):
        RetryPolicy().should_retry(0)


# --- validation -------------------------------------------------------------


@pytest.mark.parametrize(
    ("fields", "field"),
    [
        ({"max_retries": -1}, "max_retries"),
        ({"max_retries": 101}, "max_retries"),
        ({"base_seconds": 0.0}, "base_seconds"),
        ({"base_seconds": -1.0}, "base_seconds"),
        ({"base_seconds": math.nan}, "base_seconds"),
        ({"base_seconds": 86_400.5, "max_seconds": 90_000.0}, "base_seconds"),
        ({"base_seconds": 10.0, "max_seconds": 5.0}, "max_seconds"),
        ({"max_seconds": 7 * 86_400.0 + 1}, "max_seconds"),
        ({"max_seconds": math.inf}, "max_seconds"),
        ({"max_seconds": math.nan}, "max_seconds"),
        ({"jitter": "half"}, "jitter"),
    ],
)
def test_invalid_fields_are_named(fields: dict[str, Any], field: str) -> None:
    with pytest.raises(ValueError, match=f"^{field} "):
        RetryPolicy(**fields)


@pytest.mark.parametrize(
    "fields",
    [
        {"max_retries": 0},
        {"max_retries": 100},
        {"base_seconds": 86_400.0, "max_seconds": 86_400.0},
        {"max_seconds": 7 * 86_400.0},
        {"jitter": "none"},
    ],
)
def test_boundary_values_are_accepted(fields: dict[str, Any]) -> None:
    RetryPolicy(**fields)
