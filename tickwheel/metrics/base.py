"""Where the counted seconds go: one interface, a backend per deployment shape."""

from __future__ import annotations

from typing import Protocol

from tickwheel.metrics.window import Seconds

FLUSH_SECONDS = 1.0  # how often a node ships its counts (reads flush too)


class MetricsStore(Protocol):
    async def flush(self) -> None:
        """Ship what the recorder counted since the last flush."""
        ...

    async def seconds(self, now_ms: int) -> Seconds:
        """The counts of every node, per second of the window ending at `now_ms`."""
        ...

    async def close(self) -> None:
        """Flush what is left, then let go of connections."""
        ...
