"""Log lines that can come in floods, at most one per kind and interval, with a count.

A stale worker's results are refused one by one, and after a partition heals there can
be thousands at once. The first line of a kind is logged; those that follow within the
interval are counted instead, and the next line logged says how many were left out.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable, Mapping
from typing import Any


class LogTally:
    def __init__(
        self,
        logger: logging.Logger,
        *,
        every_seconds: float = 10.0,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self._logger = logger
        self._every = every_seconds
        self._clock = clock
        self._last: dict[str, float] = {}  # kind -> when its last line was logged
        self._held: dict[str, int] = {}  # kind -> lines left out since

    def log(
        self,
        level: int,
        kind: str,
        message: str,
        *args: object,
        extra: Mapping[str, Any] | None = None,
        exc_info: BaseException | None = None,
    ) -> bool:
        """Log `message % args` (with the traceback of `exc_info`) unless a line of
        `kind` was logged less than the interval ago (then count it); return whether it
        was logged."""
        now = self._clock()
        last = self._last.get(kind)
        if last is not None and now - last < self._every:
            self._held[kind] = self._held.get(kind, 0) + 1
            return False
        self._last[kind] = now
        held = self._held.pop(kind, 0)
        if held and last is not None:
            message += " (%d more like it in the last %.0f s were not logged)"
            args = (*args, held, now - last)
        self._logger.log(level, message, *args, extra=extra, exc_info=exc_info)
        return True
