"""Where the counted seconds go: one interface, a backend per deployment shape."""

from __future__ import annotations

from typing import Protocol

from tickwheel.metrics.window import Seconds


class MetricsStore(Protocol):
    async def flush(self) -> None:
        """Ship what the recorder counted since the last flush."""
        ...

    async def run(self) -> None:
        """Flush once a second until cancelled."""
        ...

    async def seconds(self, now_ms: int) -> Seconds:
        """The counts of every node, per second of the window ending at `now_ms`."""
        ...

    async def close(self) -> None:
        """Flush what is left, then let go of connections."""
        ...
