"""`AsyncClient`: the HTTP API from asyncio code."""

from __future__ import annotations

import itertools
from collections.abc import AsyncIterator, Iterable, Mapping
from types import TracebackType
from typing import TYPE_CHECKING, Any, TypeVar

from tickwheel.client import calls
from tickwheel.client.base import DEFAULT_TIMEOUT_SECONDS, ClientBase, Waiting
from tickwheel.client.calls import Call, StatusFilter
from tickwheel.client.retries import Retries
from tickwheel.client.transport import AsyncConnections, NoAnswer
from tickwheel.models import ScheduleOptions, SubmitOptions
from tickwheel.wire.answers import (
    AttemptEndOut,
    CancelledOut,
    ClaimedOut,
    FireTimesOut,
    HealthOut,
    HistoryPage,
    LeaseOut,
    LimitOut,
    NodesOut,
    QueuesOut,
    RedriveOut,
    SchedulePage,
    SubmittedOut,
    TaskOut,
    TaskPage,
    WorkflowCancelledOut,
    WorkflowOut,
    WorkflowPage,
)
from tickwheel.workflow import Workflow, workflow_body

if TYPE_CHECKING:
    from typing_extensions import Unpack

T = TypeVar("T")


async def _sleep(seconds: float) -> None:
    import asyncio  # here: a program that imports tickwheel need not load asyncio

    await asyncio.sleep(seconds)


class AsyncClient(ClientBase):
    """A Tickwheel server's API. Every call is retried when that is safe (see
    `Retries`) and raises a `TickwheelError` subclass when it fails."""

    def __init__(
        self,
        url: str | None = None,
        *,
        token: str | None = None,
        timeout_seconds: float = DEFAULT_TIMEOUT_SECONDS,
        retries: Retries = Retries(),
    ) -> None:
        super().__init__(url, token=token, timeout_seconds=timeout_seconds, retries=retries)
        self._http = AsyncConnections(self.url)

    async def close(self) -> None:
        await self._http.close()

    async def __aenter__(self) -> AsyncClient:
        return self

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        await self.close()

    async def _send(self, call: Call[T]) -> T:
        target, body, headers = self._request(call)
        timeouts = self._timeouts(call)
        for attempt in itertools.count(1):
            try:
                reply = await self._http.send(call.method, target, body, headers, timeouts)
            except NoAnswer as error:
                await _sleep(self._wait_after(call, attempt, error))
                continue
            wait = self._retries.after_answer(call, attempt, reply.status, reply.retry_after)
            if wait is None:
                return calls.answer(call, reply.status, reply.body, reply.retry_after)
            await _sleep(wait)
        raise AssertionError("unreachable")

    # -- submitting ----------------------------------------------------------

    async def submit(
        self, task_type: str, payload: Any = None, **options: Unpack[SubmitOptions]
    ) -> SubmittedOut:
        """Submit a task; it is committed when this returns. Without an
        `idempotency_key` the client makes one, so its own retries never make a second
        task."""
        return await self._send(calls.submit(calls.task_body(task_type, payload, **options)))

    async def submit_many(self, tasks: Iterable[Mapping[str, Any]]) -> list[SubmittedOut]:
        """Up to 10,000 one-off tasks (bodies from `task_body`), committed together:
        all or none; `InvalidBatch` names every invalid entry."""
        return await self._send(calls.submit_many(tasks))

    async def submit_workflow(
        self, flow: Workflow | Mapping[str, Any], *, idempotency_key: str | None = None
    ) -> WorkflowOut:
        """Submit a workflow (built in code, or a body of `POST /api/workflows`), checked
        and stored whole. Without an `idempotency_key` the client makes one, so its own
        retries never store it twice."""
        body = workflow_body(flow, idempotency_key=idempotency_key)
        return await self._send(calls.submit_workflow(body))

    async def schedule_workflow(
        self,
        flow: Workflow | Mapping[str, Any],
        cron: str | None = None,
        **options: Unpack[ScheduleOptions],
    ) -> SubmittedOut:
        """Launch the whole workflow at every fire time of `cron` (or of the `schedule`
        of a body); the options are the schedule's. Manage it by its `schedule_id` like
        any recurring task."""
        body = workflow_body(flow, cron=cron, **options)
        return await self._send(calls.schedule_workflow(body))

    # -- reading -------------------------------------------------------------

    async def get(self, task_id: str) -> TaskOut:
        return await self._send(calls.get(task_id))

    async def list_tasks(
        self,
        status: StatusFilter = None,
        *,
        task_type: str | None = None,
        queue: str | None = None,
        q: str | None = None,
        limit: int = 50,
        next_token: str | None = None,
    ) -> TaskPage:
        """One page of tasks, newest first; pass its `next_token` for the next. `q` is
        an exact task id or idempotency key."""
        call = calls.list_tasks(
            calls.statuses(status), task_type, limit, next_token, queue=queue, q=q
        )
        return await self._send(call)

    async def iter_tasks(
        self,
        status: StatusFilter = None,
        *,
        task_type: str | None = None,
        page_size: int = 500,
    ) -> AsyncIterator[TaskOut]:
        """Every matching task, newest first, a page at a time."""
        wanted, token = calls.statuses(status), None
        while True:
            page = await self.list_tasks(
                wanted, task_type=task_type, limit=page_size, next_token=token
            )
            for task in page.tasks:
                yield task
            if (token := page.next_token) is None:
                return

    async def history(
        self, task_id: str, *, limit: int = 20, next_token: str | None = None
    ) -> HistoryPage:
        return await self._send(calls.history(task_id, limit, next_token))

    async def wait(
        self, task_id: str, *, timeout_seconds: float = 60.0, poll_seconds: float = 0.1
    ) -> TaskOut:
        """The task once it has finished (succeeded, failed or cancelled); raises
        `TimeoutError` if it has not within `timeout_seconds`."""
        waiting = Waiting(task_id, timeout_seconds, poll_seconds)
        while True:  # polling: the server pushes nothing to an API client
            task = await self.get(task_id)
            if task.status in waiting.final:
                return task
            await _sleep(waiting.next_pause())

    async def queues(self) -> QueuesOut:
        return await self._send(calls.queues())

    async def health(self) -> HealthOut:
        return await self._send(calls.health())

    async def get_workflow(self, workflow_id: str) -> WorkflowOut:
        return await self._send(calls.get_workflow(workflow_id))

    async def list_workflows(
        self, *, limit: int = 20, next_token: str | None = None
    ) -> WorkflowPage:
        """One page of workflows, newest first, each with its tasks counted by status."""
        return await self._send(calls.list_workflows(limit, next_token))

    async def list_schedules(
        self, status: StatusFilter = None, *, limit: int = 50, next_token: str | None = None
    ) -> SchedulePage:
        """One page of recurring schedules, newest first (by default active and paused)."""
        return await self._send(calls.list_schedules(calls.statuses(status), limit, next_token))

    async def fire_times(self, schedule_id: str, *, count: int = 10) -> FireTimesOut:
        """A recurring schedule's next `count` fire times (at most 100), jitter included,
        with the daylight-saving changes that move or repeat them told."""
        return await self._send(calls.fire_times(schedule_id, count))

    async def cron_fire_times(
        self, cron_expression: str, timezone: str = "UTC", *, count: int = 10
    ) -> FireTimesOut:
        """When a cron expression would fire in `timezone`, before submitting it."""
        return await self._send(calls.cron_fire_times(cron_expression, timezone, count))

    async def limits(self) -> list[LimitOut]:
        """Every rate and concurrency limit, with its use now."""
        return await self._send(calls.limits())

    async def get_limit(self, scope: str, name: str) -> LimitOut:
        """One limit (`scope`: task_type, queue or key), with its use now."""
        return await self._send(calls.get_limit(scope, name))

    async def set_limit(
        self, scope: str, name: str, *, rate: str | None = None, concurrency: int | None = None
    ) -> LimitOut:
        """Set the limit of a task type, queue or limit key: at most `rate` starts
        ("100/s", "10/m", "20/10s") and at most `concurrency` running, cluster-wide."""
        return await self._send(calls.set_limit(scope, name, rate, concurrency))

    async def delete_limit(self, scope: str, name: str) -> None:
        """Remove a limit: the tasks it held back go at once."""
        await self._send(calls.delete_limit(scope, name))

    async def nodes(self) -> NodesOut:
        """The scheduler nodes alive with their partitions, and the workers alive."""
        return await self._send(calls.nodes())

    async def stats(self) -> dict[str, Any]:
        """What the dashboard reads every second: tasks per status, per-second series,
        lateness percentiles, queues and admission (`GET /api/stats`), as plain data."""
        return await self._send(calls.stats())

    async def metrics(self) -> str:
        """This server process's metrics in the Prometheus text format."""
        return await self._send(calls.metrics())

    # -- operations ----------------------------------------------------------

    async def cancel_workflow(self, workflow_id: str) -> WorkflowCancelledOut:
        """Cancel every task of the workflow not yet finished."""
        return await self._send(calls.cancel_workflow(workflow_id))

    async def cancel(self, task_id: str) -> CancelledOut:
        return await self._send(calls.cancel(task_id))

    async def redrive(self, task_ids: Iterable[str]) -> RedriveOut:
        return await self._send(calls.redrive(task_ids))

    async def set_priority(self, task_id: str, priority: int) -> TaskOut:
        return await self._send(calls.set_priority(task_id, priority))

    async def pause(self, task_id: str) -> TaskOut:
        return await self._send(calls.pause(task_id))

    async def resume(self, task_id: str) -> TaskOut:
        return await self._send(calls.resume(task_id))

    # -- the worker protocol -------------------------------------------------

    async def claim(
        self,
        worker_id: str,
        *,
        queues: Iterable[str] = ("default",),
        task_types: Iterable[str] | None = None,
        max_tasks: int = 10,
        wait_seconds: float = 0.0,
    ) -> list[ClaimedOut]:
        return await self._send(calls.claim(worker_id, queues, task_types, max_tasks, wait_seconds))

    async def heartbeat(self, task_id: str, fence: int) -> LeaseOut:
        return await self._send(calls.heartbeat(task_id, fence))

    async def complete(self, task_id: str, fence: int) -> AttemptEndOut:
        return await self._send(calls.complete(task_id, fence))

    async def fail(
        self, task_id: str, fence: int, error: str, *, retryable: bool = True
    ) -> AttemptEndOut:
        return await self._send(calls.fail(task_id, fence, error, retryable))
