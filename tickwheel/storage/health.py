"""How a store is faring: whether it failed a moment ago, and a log of its failures
that stays readable through an outage.

A store that is down fails every request, thousands a second under load. One line per
failure (let alone a traceback) buries everything else, so failures are tallied by
kind and logged at most once per `LOG_EVERY_SECONDS`: the first at once, the rest as a
count. Admission control asks `failing()` so that it does not blame the workers for a
backlog that only waits on the store.
"""

from __future__ import annotations

import logging
import time
from collections import Counter
from collections.abc import Callable

from tickwheel.errors import StoreUnavailable

log = logging.getLogger(__name__)

LOG_EVERY_SECONDS = 10.0
# A store that failed this recently is taken as failing still: failures and successes
# interleave during an outage (a pool reconnecting, some statements getting through).
FAILING_SECONDS = 5.0


class StoreHealth:
    def __init__(self, name: str = "store", *, now: Callable[[], float] = time.monotonic) -> None:
        self._name = name
        self._now = now
        self._last_failure: float | None = None
        self._last_log: float | None = None
        self._tally: Counter[str] = Counter()
        self.failures = 0  # ever: for tests and metrics

    def failed(self, error: StoreUnavailable) -> None:
        """Count one failure; log the tally if none was logged for a while."""
        now = self._now()
        self._last_failure = now
        self.failures += 1
        self._tally[error.code] += 1
        if self._last_log is not None and now - self._last_log < LOG_EVERY_SECONDS:
            return
        counts = ", ".join(f"{count} {code}" for code, count in sorted(self._tally.items()))
        since = "" if self._last_log is None else f" in the last {now - self._last_log:.0f} s"
        log.warning("the %s failed (%s%s); last: %s", self._name, counts, since, error)
        self._last_log = now
        self._tally.clear()

    def failing(self) -> bool:
        """Whether the store failed within the last `FAILING_SECONDS`."""
        last = self._last_failure
        return last is not None and self._now() - last < FAILING_SECONDS
