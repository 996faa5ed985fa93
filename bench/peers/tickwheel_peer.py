"""Tickwheel as one more system of the comparison, run and measured like every peer.

Workers: distributed, `tickwheel local-cluster --schedulers 2 --workers 2 --app ...`
(one API, two schedulers, two workers) on a fresh PostgreSQL schema and Redis prefix;
embedded, `tickwheel up --app ...` on a fresh SQLite file. Each worker runs 64 tasks at
once (`TICKWHEEL_CONCURRENCY`); the handler is the shared body (`tickwheel_tasks`), not
the built-in no-op. Admission control keeps its defaults, as a user's server does.

Submission: through Tickwheel's own client with its defaults, `AsyncClient(url)
.submit_many(...)`, a chunk of 1,000 tasks a call and 4 calls in flight; a task with an
ETA carries it as `due_time`.

`reset` makes the fresh stores and picks a free port; `close` removes the stores.
"""

from __future__ import annotations

from contextlib import AsyncExitStack

from bench.peers import tickwheel_tasks
from bench.peers.shared import eta
from bench.stores import Mode
from bench.targets import Target, command, environment, free_port, fresh_stores
from tickwheel import AsyncClient
from tickwheel.client import task_body

CONCURRENCY = 64
SCHEDULERS = 2
WORKERS = 2


class TickwheelPeer:
    distribution = "tickwheel"
    in_flight = 4

    def __init__(self, mode: Mode) -> None:
        self.mode = mode
        self.name = f"tickwheel ({mode})"
        self._stores = AsyncExitStack()
        self._target: Target | None = None
        self._client: AsyncClient | None = None

    def worker_commands(self) -> list[list[str]]:
        port, app = self._running().port, tickwheel_tasks.APP
        return [command(self.mode, port, schedulers=SCHEDULERS, workers=WORKERS, app=app)]

    def worker_env(self) -> dict[str, str]:
        return self._running().env

    async def ready(self) -> bool:
        return await self._running().serving(SCHEDULERS)

    async def reset(self) -> None:
        await self.close()
        port = free_port()
        stores = await self._stores.enter_async_context(fresh_stores(self.mode))
        env = environment(port, CONCURRENCY, lift_admission=False) | stores
        self._target = Target(self.mode, port, env)

    async def submit(self, run: str, indexes: range, due_ms: int | None) -> None:
        if self._client is None:
            self._client = AsyncClient(self._running().url)
        when = eta(due_ms)
        payloads = ({"run": run, "index": i} for i in indexes)
        if when is None:
            bodies = [task_body(tickwheel_tasks.TASK, p) for p in payloads]
        else:
            bodies = [task_body(tickwheel_tasks.TASK, p, due_time=when) for p in payloads]
        await self._client.submit_many(bodies)

    async def close(self) -> None:
        if self._client is not None:
            await self._client.close()
            self._client = None
        if self._target is not None:
            await self._target.close()
            self._target = None
        await self._stores.aclose()

    def _running(self) -> Target:
        if self._target is None:
            raise RuntimeError("reset() first: it makes the stores Tickwheel runs on")
        return self._target


def distributed() -> TickwheelPeer:
    return TickwheelPeer(Mode.DISTRIBUTED)


def embedded() -> TickwheelPeer:
    return TickwheelPeer(Mode.EMBEDDED)
