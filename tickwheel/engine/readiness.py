"""Whether a node can do its work: each dependency asked now (readiness), or as its
callers last found it (the dashboard's outage banner).

Liveness (`/healthz`) says the process answers; readiness (`/readyz`) says whether the
store and the ready queue answer it too, so an orchestrator stops sending it traffic
while one is down and a load balancer tells operators why.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable

from tickwheel.errors import describe
from tickwheel.queue.base import ReadyQueue
from tickwheel.storage.base import Store

CHECK_SECONDS = 2.0  # a dependency slower than this to answer is not ready


async def check(store: Store, queue: ReadyQueue) -> dict[str, str | None]:
    """Each dependency's problem now, or None where it answered in time."""
    store_check, queue_check = await asyncio.gather(
        _answers(store.now_ms), _answers(queue.fresh_depth)
    )
    return {"store": store_check, "ready_queue": queue_check}


async def _answers(call: Callable[[], Awaitable[object]]) -> str | None:
    try:
        async with asyncio.timeout(CHECK_SECONDS):
            await call()
    except TimeoutError:
        return f"no answer within {CHECK_SECONDS:g} s"
    except Exception as error:
        return describe(error)
    return None


def outages(*, store_failing: bool, queue_failing: bool) -> list[str]:
    """The dependencies whose calls failed a moment ago, as this node's callers found."""
    failing = {"store": store_failing, "ready_queue": queue_failing}
    return [name for name, down in failing.items() if down]
