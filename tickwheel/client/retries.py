"""When a client tries a call again, and how long it waits first.

A refusal that did nothing (`429`, or a connection never made) is always tried again;
a try whose outcome is unknown (a timeout after the request went out, a `502`-`504`)
only for calls that are safe to repeat. `Retry-After` is honoured; otherwise the wait
is exponential with full jitter, so many clients do not come back in step.
"""

from __future__ import annotations

import random
from dataclasses import dataclass
from typing import Any

from tickwheel.client.calls import Call, retry_after_seconds
from tickwheel.client.transport import NoAnswer
from tickwheel.core.retry import RetryPolicy

REFUSED = 429
UNKNOWN_OUTCOME = frozenset({502, 503, 504})


DEFAULT_POLICY = RetryPolicy(max_retries=4, base_seconds=0.2, max_seconds=5.0)


@dataclass(frozen=True, slots=True)
class Retries:
    policy: RetryPolicy = DEFAULT_POLICY
    max_retry_after_seconds: float = 30.0  # a longer Retry-After is raised as Overloaded

    def after_answer(
        self, call: Call[Any], attempt: int, status: int, retry_after: str | None
    ) -> float | None:
        """Seconds to wait before trying again, or None to take this answer."""
        again = status == REFUSED or (status in UNKNOWN_OUTCOME and call.repeatable)
        if not again or not self.policy.should_retry(attempt):
            return None
        asked = retry_after_seconds(retry_after)
        if asked is None:
            return self.policy.delay(attempt, random.random)
        return asked if asked <= self.max_retry_after_seconds else None

    def after_error(self, call: Call[Any], attempt: int, error: NoAnswer) -> float | None:
        """Seconds to wait before trying again, or None to give up."""
        if (error.sent and not call.repeatable) or not self.policy.should_retry(attempt):
            return None
        return self.policy.delay(attempt, random.random)


NO_RETRIES = Retries(RetryPolicy(max_retries=0))
