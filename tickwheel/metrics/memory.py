"""Metrics in this process: embedded mode, where every role shares one recorder."""

from __future__ import annotations

from collections import Counter

from tickwheel.metrics.recorder import Recorder, Second
from tickwheel.metrics.window import WINDOW_SECONDS, Seconds


class MemoryMetrics:
    def __init__(self, recorder: Recorder) -> None:
        self._recorder = recorder
        self._seconds: dict[int, Second] = {}

    async def flush(self) -> None:
        for second, counts in self._recorder.take().items():
            self._seconds.setdefault(second, Counter()).update(counts)
        if len(self._seconds) > WINDOW_SECONDS:  # some seconds left the window
            oldest = max(self._seconds) - WINDOW_SECONDS + 1
            for second in [s for s in self._seconds if s < oldest]:
                del self._seconds[second]

    async def seconds(self, now_ms: int) -> Seconds:
        await self.flush()
        return self._seconds

    async def close(self) -> None:
        return None
