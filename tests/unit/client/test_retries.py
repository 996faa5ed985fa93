"""When the client tries a call again: refusals always, unknown outcomes only when safe."""

from __future__ import annotations

import pytest

from tickwheel.client import calls
from tickwheel.client.retries import Retries
from tickwheel.client.transport import NoAnswer
from tickwheel.core.retry import RetryPolicy

RETRIES = Retries(RetryPolicy(max_retries=2, base_seconds=0.5, max_seconds=4), 30)
SUBMIT = calls.submit(calls.task_body("noop"))
CLAIM = calls.claim("w", ["default"], None, 1, 0)


def test_a_refusal_waits_as_long_as_retry_after_asks() -> None:
    assert RETRIES.after_answer(SUBMIT, 1, 429, "7") == 7
    assert RETRIES.after_answer(CLAIM, 1, 429, "2") == 2  # a refusal did nothing: any call


def test_a_retry_after_beyond_the_clients_patience_is_not_waited_for() -> None:
    assert RETRIES.after_answer(SUBMIT, 1, 429, "31") is None


def test_without_retry_after_the_wait_is_jittered_backoff() -> None:
    waits = [RETRIES.after_answer(SUBMIT, 2, 503, None) for _ in range(200)]
    assert all(w is not None and 0 <= w < 1.0 for w in waits)  # base * 2 for the 2nd
    assert len(set(waits)) > 100


@pytest.mark.parametrize("status", [502, 503, 504])
def test_an_unknown_outcome_is_retried_only_when_safe(status: int) -> None:
    assert RETRIES.after_answer(SUBMIT, 1, status, None) is not None
    assert RETRIES.after_answer(CLAIM, 1, status, None) is None


@pytest.mark.parametrize("status", [200, 201, 400, 401, 404, 409, 422, 500])
def test_answers_are_taken_as_they_are(status: int) -> None:
    assert RETRIES.after_answer(SUBMIT, 1, status, "1") is None


def test_tries_stop_after_the_budget() -> None:
    assert RETRIES.after_answer(SUBMIT, 2, 429, "1") == 1
    assert RETRIES.after_answer(SUBMIT, 3, 429, "1") is None


def test_a_connection_never_made_is_retried_for_any_call() -> None:
    refused = NoAnswer("refused", sent=False)
    lost = NoAnswer("lost", sent=True)
    assert RETRIES.after_error(CLAIM, 1, refused) is not None
    assert RETRIES.after_error(CLAIM, 1, lost) is None
    assert RETRIES.after_error(SUBMIT, 1, lost) is not None
    assert RETRIES.after_error(SUBMIT, 3, refused) is None
