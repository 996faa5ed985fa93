"""How an attempt ends: retry with backoff, or a final state. Decided once, here."""

from __future__ import annotations

import random
from collections.abc import Callable

from tickwheel.core.retry import RetryPolicy
from tickwheel.models import Finish, Outcome, Status, TaskOptions


def policy_of(options: TaskOptions) -> RetryPolicy:
    return RetryPolicy(
        max_retries=options.max_retries,
        base_seconds=options.backoff_base_seconds,
        max_seconds=max(options.backoff_max_seconds, options.backoff_base_seconds),
    )


def succeeded(seq: int, fence: int, now_ms: int, *, started_ms: int | None = None) -> Finish:
    return Finish(seq, fence, Outcome.SUCCEEDED, Status.SUCCEEDED, now_ms, started_ms=started_ms)


def expired(seq: int, fence: int, now_ms: int, *, started_ms: int | None = None) -> Finish:
    """A task claimed ahead whose expiry came before a slot did: it ends without running."""
    error = "not started before it expired (it waited for a slot)"
    return Finish(seq, fence, Outcome.EXPIRED, Status.EXPIRED, now_ms, error, started_ms=started_ms)


def failed(
    seq: int,
    fence: int,
    *,
    attempt: int,
    options: TaskOptions,
    outcome: Outcome,
    error: str,
    now_ms: int,
    retryable: bool = True,
    rand: Callable[[], float] = random.random,
    started_ms: int | None = None,
) -> Finish:
    """A failed attempt goes back to pending after a backoff while retries remain."""
    policy = policy_of(options)
    if retryable and policy.should_retry(attempt):
        delay_ms = round(policy.delay(attempt, rand) * 1000)
        retry_at = now_ms + delay_ms
        return Finish(
            seq, fence, outcome, Status.PENDING, now_ms, error, retry_at, started_ms=started_ms
        )
    return Finish(seq, fence, outcome, Status.FAILED, now_ms, error, started_ms=started_ms)
