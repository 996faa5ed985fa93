"""Task handlers for `tickwheel up --app examples.embedded.handlers`."""

from __future__ import annotations

import asyncio
import logging
from typing import Any

from tickwheel import App, PermanentFailure, TaskContext

app = App()
log = logging.getLogger(__name__)


@app.task("greet", max_retries=5, retry_backoff=(1.0, 60.0))
async def greet(ctx: TaskContext, payload: dict[str, Any]) -> None:
    """An async handler: runs on the event loop."""
    if "name" not in payload:
        raise PermanentFailure("payload needs a name")  # no retry can fix this
    await asyncio.sleep(0.01)
    log.warning("hello %s (attempt %d of task %s)", payload["name"], ctx.attempt, ctx.task_id)


@app.task("resize", timeout_seconds=30)
def resize(ctx: TaskContext, payload: dict[str, Any]) -> dict[str, int]:
    """A plain function: runs in the worker's thread pool."""
    return {"width": payload.get("width", 100) // 2}
