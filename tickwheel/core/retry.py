"""Retry policy: whether a failed task runs again, and how long it waits first.

Exponential backoff capped at ``max_seconds``, with full jitter by default so that
tasks failing together do not retry together. Randomness is injected, so callers
pass ``random.random`` and tests pass a constant.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass
from typing import Literal

__all__ = ["RetryPolicy"]

_MAX_RETRIES = 100
_MAX_BASE_SECONDS = 86_400.0
_MAX_CAP_SECONDS = 7 * 86_400.0


@dataclass(frozen=True, slots=True)
class RetryPolicy:
    """How often and how late a failed task is retried.

    ``attempt`` and ``attempts_made`` count attempts so far, the one that just failed
    included: after the first failure both are 1.
    """

    max_retries: int = 3
    base_seconds: float = 1.0
    max_seconds: float = 300.0
    jitter: Literal["full", "none"] = "full"

    def __post_init__(self) -> None:
        if not 0 <= self.max_retries <= _MAX_RETRIES:
            raise ValueError(
                f"max_retries must be between 0 and {_MAX_RETRIES}, got {self.max_retries}"
            )
        # Written as "not (within range)" so that NaN is rejected too.
        if not 0 < self.base_seconds <= _MAX_BASE_SECONDS:
            raise ValueError(
                f"base_seconds must be > 0 and <= {_MAX_BASE_SECONDS:g}, got {self.base_seconds}"
            )
        if not self.base_seconds <= self.max_seconds <= _MAX_CAP_SECONDS:
            raise ValueError(
                f"max_seconds must be >= base_seconds ({self.base_seconds}) and "
                f"<= {_MAX_CAP_SECONDS:g}, got {self.max_seconds}"
            )
        if self.jitter not in ("full", "none"):
            raise ValueError(f"jitter must be 'full' or 'none', got {self.jitter!r}")

    def backoff_cap(self, attempt: int) -> float:
        """``min(max_seconds, base_seconds * 2 ** (attempt - 1))``, for any attempt >= 1."""
        _require_positive(attempt, "attempt")
        exponent = attempt - 1
        # Compare in log space: 2 ** exponent overflows a float long before
        # attempt gets large, and the cap is reached long before that anyway.
        if exponent >= math.log2(self.max_seconds) - math.log2(self.base_seconds):
            return self.max_seconds
        return min(self.max_seconds, math.ldexp(self.base_seconds, exponent))

    def delay(self, attempt: int, rand: Callable[[], float]) -> float:
        """Seconds to wait before the next attempt; ``rand`` returns a float in [0, 1)."""
        cap = self.backoff_cap(attempt)
        if self.jitter == "none":
            return cap
        sample = rand()
        if not 0.0 <= sample < 1.0:
            raise ValueError(f"rand() must return a float in [0, 1), got {sample}")
        return sample * cap

    def should_retry(self, attempts_made: int) -> bool:
        """True while the attempts made so far leave retries in the budget."""
        _require_positive(attempts_made, "attempts_made")
        return attempts_made <= self.max_retries


def _require_positive(count: int, name: str) -> None:
    if count < 1:
        raise ValueError(f"{name} must be at least 1, got {count}")
