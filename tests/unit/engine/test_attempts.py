"""How an attempt ends: success, a retry after a backoff, or a final failure."""

from __future__ import annotations

import math

import pytest
from hypothesis import given
from hypothesis import strategies as st

from tickwheel.engine.attempts import failed, policy_of, succeeded
from tickwheel.models import Finish, Outcome, Status, TaskOptions

NOW = 1_700_000_000_000
SEQ, FENCE = 42, 7
ALMOST_ONE = math.nextafter(1.0, 0.0)


def never_called() -> float:
    raise AssertionError("rand must not be called when no retry follows")


def fail(
    attempt: int,
    options: TaskOptions,
    *,
    outcome: Outcome = Outcome.FAILED,
    error: str = "boom",
    retryable: bool = True,
    rand: float | None = 0.5,
) -> Finish:
    return failed(
        SEQ,
        FENCE,
        attempt=attempt,
        options=options,
        outcome=outcome,
        error=error,
        now_ms=NOW,
        retryable=retryable,
        rand=never_called if rand is None else lambda: rand,
    )


def test_success_is_final_with_no_retry() -> None:
    assert succeeded(SEQ, FENCE, NOW) == Finish(
        seq=SEQ,
        fence=FENCE,
        outcome=Outcome.SUCCEEDED,
        status=Status.SUCCEEDED,
        ended_ms=NOW,
        error=None,
        retry_at_ms=None,
    )


def test_failure_with_retries_left_goes_back_to_pending() -> None:
    options = TaskOptions(max_retries=3, backoff_base_seconds=2.0, backoff_max_seconds=60.0)
    finish = fail(1, options, rand=0.5)
    assert finish == Finish(
        seq=SEQ,
        fence=FENCE,
        outcome=Outcome.FAILED,
        status=Status.PENDING,
        ended_ms=NOW,
        error="boom",
        retry_at_ms=NOW + 1_000,  # half of the first cap, 2 s
    )


@pytest.mark.parametrize(("attempt", "cap_ms"), [(1, 2_000), (2, 4_000), (3, 8_000)])
def test_backoff_cap_grows_per_attempt(attempt: int, cap_ms: int) -> None:
    options = TaskOptions(max_retries=3, backoff_base_seconds=2.0, backoff_max_seconds=60.0)
    assert fail(attempt, options, rand=0.0).retry_at_ms == NOW
    assert fail(attempt, options, rand=ALMOST_ONE).retry_at_ms == NOW + cap_ms


def test_backoff_is_capped_by_backoff_max() -> None:
    options = TaskOptions(max_retries=20, backoff_base_seconds=1.0, backoff_max_seconds=30.0)
    assert fail(20, options, rand=ALMOST_ONE).retry_at_ms == NOW + 30_000


@given(
    max_retries=st.integers(min_value=1, max_value=100),
    data=st.data(),
    base=st.floats(min_value=0.001, max_value=86_400.0),
    cap=st.floats(min_value=0.001, max_value=7 * 86_400.0),
    sample=st.floats(min_value=0.0, max_value=ALMOST_ONE),
)
def test_retry_at_lies_within_the_backoff_window(
    max_retries: int, data: st.DataObject, base: float, cap: float, sample: float
) -> None:
    attempt = data.draw(st.integers(min_value=1, max_value=max_retries), label="attempt")
    options = TaskOptions(
        max_retries=max_retries, backoff_base_seconds=base, backoff_max_seconds=cap
    )
    finish = fail(attempt, options, rand=sample)
    window_ms = min(max(cap, base), base * 2.0 ** (attempt - 1)) * 1000
    assert finish.status is Status.PENDING
    assert finish.retry_at_ms is not None
    assert NOW <= finish.retry_at_ms <= NOW + math.ceil(window_ms)
    assert (finish.outcome, finish.error, finish.ended_ms) == (Outcome.FAILED, "boom", NOW)


def test_last_attempt_fails_for_good_keeping_the_error() -> None:
    options = TaskOptions(max_retries=3)
    finish = fail(4, options, error="HTTP 503 from https://example.com", rand=None)
    assert finish == Finish(
        seq=SEQ,
        fence=FENCE,
        outcome=Outcome.FAILED,
        status=Status.FAILED,
        ended_ms=NOW,
        error="HTTP 503 from https://example.com",
        retry_at_ms=None,
    )


@given(max_retries=st.integers(min_value=0, max_value=100), data=st.data())
def test_retries_exactly_max_retries_times(max_retries: int, data: st.DataObject) -> None:
    options = TaskOptions(max_retries=max_retries)
    attempt = data.draw(st.integers(min_value=1, max_value=max_retries + 3), label="attempt")
    finish = fail(attempt, options)
    if attempt <= max_retries:
        assert (finish.status, finish.retry_at_ms is not None) == (Status.PENDING, True)
    else:
        assert (finish.status, finish.retry_at_ms) == (Status.FAILED, None)


def test_non_retryable_failure_is_final_at_once() -> None:
    options = TaskOptions(max_retries=5)
    finish = fail(1, options, error="HTTP 404", retryable=False, rand=None)
    assert (finish.status, finish.retry_at_ms, finish.error) == (Status.FAILED, None, "HTTP 404")


@pytest.mark.parametrize("outcome", [Outcome.FAILED, Outcome.LEASE_EXPIRED, Outcome.TIMED_OUT])
def test_outcome_is_preserved_on_retry(outcome: Outcome) -> None:
    finish = fail(1, TaskOptions(max_retries=2), outcome=outcome)
    assert (finish.outcome, finish.status) == (outcome, Status.PENDING)


@pytest.mark.parametrize("outcome", [Outcome.FAILED, Outcome.LEASE_EXPIRED, Outcome.TIMED_OUT])
def test_outcome_is_preserved_on_final_failure(outcome: Outcome) -> None:
    finish = fail(3, TaskOptions(max_retries=2), outcome=outcome, error="lease lost", rand=None)
    assert (finish.outcome, finish.status, finish.error) == (outcome, Status.FAILED, "lease lost")


def test_zero_retries_fails_at_the_first_failure() -> None:
    finish = fail(1, TaskOptions(max_retries=0), rand=None)
    assert (finish.status, finish.retry_at_ms, finish.error) == (Status.FAILED, None, "boom")


def test_backoff_max_below_base_uses_base_as_the_cap() -> None:
    options = TaskOptions(max_retries=3, backoff_base_seconds=10.0, backoff_max_seconds=1.0)
    assert policy_of(options).max_seconds == 10.0
    assert fail(3, options, rand=ALMOST_ONE).retry_at_ms == NOW + 10_000


def test_policy_of_carries_the_task_options() -> None:
    policy = policy_of(
        TaskOptions(max_retries=7, backoff_base_seconds=0.5, backoff_max_seconds=90.0)
    )
    assert (policy.max_retries, policy.base_seconds, policy.max_seconds) == (7, 0.5, 90.0)
    assert policy.jitter == "full"
