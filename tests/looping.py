"""Background loops in tests, driven by a `ManualClock`: let them run as far as they can
without the clock moving, and run one for the length of a block."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Coroutine
from contextlib import asynccontextmanager
from typing import Any

import pytest


async def settle() -> None:
    """Let every loop run until it waits (on the clock, or on a wake)."""
    for _ in range(50):
        await asyncio.sleep(0)


@asynccontextmanager
async def running(loop: Coroutine[Any, Any, None]) -> AsyncIterator[None]:
    """Run `loop` (settled) for the block, then cancel it: it must stop."""
    task = asyncio.create_task(loop)
    await settle()
    try:
        yield
    finally:
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task
