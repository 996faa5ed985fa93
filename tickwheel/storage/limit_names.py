"""Which task types, queues and keys have limits, as a store last read them: its plain
claim skips their tasks, leaving them to the limited claim (`plans.limits`).

Read again once a second at most, so a limit set or removed anywhere takes effect
within a second; one set or removed through this store takes effect at once.
"""

from __future__ import annotations

import time
from collections.abc import Awaitable, Callable, Iterable

from tickwheel.core.limits import Scope
from tickwheel.storage.plans.steps import Skipped

FRESH_SECONDS = 1.0


def skipped(names: Iterable[tuple[str, str]]) -> Skipped:
    """The (scope, name) of every limit, as a plain claim's `Skipped`."""
    by_scope: dict[str, list[str]] = {scope: [] for scope in Scope}
    for scope, name in names:
        by_scope.setdefault(scope, []).append(name)
    return Skipped(
        tuple(by_scope[Scope.TASK_TYPE]), tuple(by_scope[Scope.QUEUE]), tuple(by_scope[Scope.KEY])
    )


class LimitNames:
    def __init__(self, read: Callable[[], Awaitable[list[tuple[str, str]]]]) -> None:
        self._read = read
        self._skipped = Skipped()
        self._read_at: float | None = None

    async def current(self) -> Skipped:
        now = time.monotonic()
        if self._read_at is None or now - self._read_at >= FRESH_SECONDS:
            self._skipped = skipped(await self._read())
            self._read_at = now
        return self._skipped

    def changed(self) -> None:
        """A limit was set or removed here: read them again before the next claim."""
        self._read_at = None
