"""Waiting for an event with a deadline, without losing a cancellation.

`asyncio.wait_for` in Python 3.11 can swallow the cancellation of its caller when the
awaited thing completes at the same moment, which leaves a loop running after its
task was cancelled. `asyncio.timeout` does not have that flaw.
"""

from __future__ import annotations

import asyncio


async def wait_event(event: asyncio.Event, seconds: float) -> bool:
    """Wait until `event` is set or `seconds` pass; True if it was set."""
    if event.is_set():
        return True
    try:
        async with asyncio.timeout(seconds):
            await event.wait()
    except TimeoutError:
        return False
    return True
