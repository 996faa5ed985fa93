"""The worker: pulls due tasks, claims them in batches, runs handlers under a lease.

Pull and claim are batched (one store write claims a whole batch), heartbeats extend
every in-flight lease in one write, and ends of attempts are group-committed by the
dispatcher. A heartbeat that finds a stale fence (the task was cancelled or its lease
taken over) stops that handler: its result would be refused anyway.
"""

from __future__ import annotations

import asyncio
import contextlib
import contextvars
import functools
import logging
import os
import socket
import time
from collections import deque
from collections.abc import Collection
from concurrent.futures import ThreadPoolExecutor
from typing import Any

from tickwheel.attempt_log import log_failed_attempt
from tickwheel.clock import Clock, to_datetime
from tickwheel.errors import PermanentFailure, describe
from tickwheel.log_tally import LogTally
from tickwheel.models import ClaimedTask, Finish, Outcome
from tickwheel.outage import log_failure
from tickwheel.periodic import Periodic
from tickwheel.queue.base import ReadyItem, ReadyQueue
from tickwheel.storage.base import WorkerBeat, WorkerStore
from tickwheel.storage.records import Claimed
from tickwheel.tracing import OFF, Tracing
from tickwheel.waiting import wait_event
from tickwheel.worker.ahead import ClaimAhead
from tickwheel.worker.claims import Claims
from tickwheel.worker.context import TaskContext
from tickwheel.worker.registry import App, TaskType

log = logging.getLogger(__name__)

MAX_ERROR_CHARS = 4000
MAX_FETCHES = 4  # pulls and claims in flight at once while the queue has depth
END_RETRY_FIRST_SECONDS = 0.05  # an end the store could not take: first wait, doubling
END_RETRY_MAX_SECONDS = 1.0


def default_worker_id() -> str:
    return f"{socket.gethostname()}:{os.getpid()}"


class Worker:
    def __init__(
        self,
        *,
        app: App,
        dispatcher: Claims,
        queue: ReadyQueue,
        clock: Clock,
        worker_id: str | None = None,
        queues: Collection[str] = ("default",),
        concurrency: int = 64,
        prefetch: int = 0,
        batch_size: int = 256,
        poll_seconds: float = 1.0,
        threads: int = 16,
        registry: WorkerStore | None = None,
        report_seconds: float = 5.0,
        tracing: Tracing = OFF,
    ) -> None:
        """`prefetch`: the most tasks claimed ahead of free slots, so that the round
        trips of pulling and claiming overlap with running (0: never). How many are
        claimed ahead follows the start rate (`ClaimAhead`), so long tasks are not held
        back behind running ones."""
        self._app = app
        self._dispatcher = dispatcher
        self._tracing = tracing
        self._queue = queue
        self.worker_id = worker_id or default_worker_id()
        self._queues = tuple(queues)
        self._concurrency = concurrency
        self._ahead = ClaimAhead(prefetch, lease_seconds=dispatcher.lease_ms / 1000)
        self._batch_size = batch_size
        self._poll = poll_seconds
        self._threads = ThreadPoolExecutor(threads, thread_name_prefix="tickwheel-task")
        # Claimed tasks, until their end is written: those running and those writing
        # their end (heartbeats keep both leases); `_running` counts the first.
        self._inflight: dict[int, tuple[ClaimedTask, asyncio.Task[None]]] = {}
        self._running = 0
        self._claimed: deque[ClaimedTask] = deque()  # claimed, waiting for a free slot
        self._starting = True
        self._reserved = 0  # room taken by pulls and claims in flight
        self._fetches: set[asyncio.Task[None]] = set()
        self._deep = False  # the last pull came back full: the queue has depth
        # Tasks under a limit were put back for want of a free slot: pulling ahead would
        # only put them back again, so the worker waits for a slot.
        self._limited_waiting = False
        self._promised = 0  # free slots offered to claims in flight (`start_now`)
        self._room = asyncio.Event()  # a slot, or room to fetch, came free
        self._stopping = False
        self._revoked: set[int] = set()
        self._pulling_done = asyncio.Event()
        self._pulls: set[asyncio.Future[list[ReadyItem]]] = set()  # to cancel at stop
        self._heartbeats: asyncio.Task[None] | None = None
        self._beating = Periodic(
            "heartbeating the tasks in flight",
            self._heartbeat,
            clock=clock,
            every_seconds=dispatcher.lease_ms / 3000,
            log=log,
            wait_first=True,
        )
        # Where each claimed task's lease ends (cluster ms) as last extended: its claim's
        # own until a heartbeat gets through.
        self._leases: dict[int, int] = {}
        self._refusals = LogTally(log)
        # Where this worker says it is alive, for operators to see (None: nowhere).
        self._registry = registry
        self._report_seconds = report_seconds
        self._reports: asyncio.Task[None] | None = None
        self._clock = clock
        self.completed = 0

    # -- pulling -------------------------------------------------------------

    async def run(self) -> None:
        """Keep claimed work ahead of the free slots. While the queue has depth (the
        last pull came back full), up to MAX_FETCHES pulls and claims are in flight at
        once, so a far store costs round trips per batch, not per task; an idle queue
        has one long poll waiting."""
        # Heartbeats outlive the pull loop: they keep running tasks' leases alive
        # through a graceful shutdown, and `stop` ends them last.
        self._heartbeats = asyncio.create_task(self._beating.run())
        if self._registry is not None:
            self._reports = asyncio.create_task(self._report_loop(self._registry).run())
        try:
            while not self._stopping:
                # Tasks writing their ends hold no slot: their writes are batched, and
                # bounded apart so that a slow store makes the worker wait, not grow.
                ahead = 0 if self._limited_waiting else self._ahead.amount()
                holding = self._concurrency + ahead
                room = holding - self._running - len(self._claimed) - self._reserved
                ending = len(self._inflight) - self._running
                wanted = MAX_FETCHES if self._deep else 1
                most_ending = (self._concurrency + self._ahead.most) * 4
                if room <= 0 or len(self._fetches) >= wanted or ending > most_ending:
                    self._room.clear()
                    await self._room.wait()
                    continue
                # While the queue has depth, a fetch takes a share of the room, so that
                # several are in flight and their round trips overlap.
                share = -(-holding // 2) if self._deep else holding
                limit = min(room, self._batch_size, share)
                self._reserved += limit
                fetch = asyncio.create_task(self._fetch(limit))
                self._fetches.add(fetch)
                fetch.add_done_callback(self._fetched)
            await asyncio.gather(*self._fetches, return_exceptions=True)
        finally:
            self._pulling_done.set()

    def _fetched(self, fetch: asyncio.Task[None]) -> None:
        self._fetches.discard(fetch)
        self._room.set()

    async def _fetch(self, limit: int) -> None:
        """Pull up to `limit` tasks and claim them; they wait in `_claimed` for a slot."""
        began = time.monotonic()
        try:
            items = await self._pull(limit)
            self._deep = len(items) == limit
            if not items:
                return
            if self._stopping:
                await self._hand_back(items)  # pulled but never claimed
                return
            found = await self._claim(items)
            if found is None:
                return
            claimed = found.tasks
            if found.deferred:  # they went back on the queue: claim ahead once a slot frees
                self._limited_waiting = True
            if self._deep:
                self._ahead.fetched(time.monotonic() - began)
            if self._tracing.enabled:
                self._tracing.claimed(claimed, items)
            # A task under a limit was counted when claimed: it starts before those
            # claimed ahead of it, so that starts keep to the limit as claims did.
            limited = [t for t in claimed if t.seq in found.limited]
            self._claimed.extendleft(reversed(limited))
            self._claimed.extend(t for t in claimed if t.seq not in found.limited)
            self._start_claimed()
        finally:
            self._reserved -= limit

    async def _claim(self, items: list[ReadyItem]) -> Claimed | None:
        """Claim pulled items; when that fails, they go back on the queue (None).

        Tasks under a limit are claimed only to start at once (a start is counted
        against a rate when claimed): at most the free slots, less those promised to
        other claims in flight. The caller queues what was claimed before it next
        awaits, so the promise holds until then."""
        free = max(0, self._concurrency - self._running - len(self._claimed) - self._promised)
        self._promised += free
        try:
            return await self._dispatcher.claim(items, self.worker_id, start_now=free)
        except Exception as error:
            log_failure(log, error, "claiming %d tasks failed; back on the queue", len(items))
            await self._hand_back(items)
            await asyncio.sleep(self._poll)
            return None
        finally:
            self._promised -= free

    async def _pull(self, limit: int) -> list[ReadyItem]:
        pull = asyncio.ensure_future(
            self._queue.pull(self._queues, limit=limit, wait_seconds=self._poll)
        )
        self._pulls.add(pull)
        try:
            return await pull
        except asyncio.CancelledError:
            if not self._stopping:
                raise
            return []  # stopped while waiting for work: nothing was taken
        except Exception as error:  # the queue is unreachable (Redis restarting): wait
            log_failure(log, error, "pulling from the ready queue failed; retrying")
            await asyncio.sleep(self._poll)
            return []
        finally:
            self._pulls.discard(pull)

    async def _hand_back(self, items: list[ReadyItem]) -> None:
        try:
            await self._queue.push(items)
        except Exception as error:  # still pending in the store: released again later
            log_failure(log, error, "could not give %d pulled tasks back", len(items))

    def _start_claimed(self) -> None:
        """Start claimed tasks while slots are free."""
        while self._claimed and self._running < self._concurrency and self._starting:
            task = self._claimed.popleft()
            if task.seq in self._revoked:  # cancelled or taken over while it waited
                self._revoked.discard(task.seq)
                self._leases.pop(task.seq, None)
                continue
            self._running += 1
            self._ahead.started()
            runner = asyncio.create_task(self._run(task))
            self._inflight[task.seq] = (task, runner)
            runner.add_done_callback(functools.partial(self._done, task.seq))

    def _slot_freed(self) -> None:
        self._running -= 1
        self._limited_waiting = False
        self._start_claimed()
        self._room.set()

    def _done(self, seq: int, _: object = None) -> None:
        self._inflight.pop(seq, None)
        self._leases.pop(seq, None)
        self._revoked.discard(seq)
        self._room.set()

    # -- running -------------------------------------------------------------

    async def _run(self, task: ClaimedTask) -> None:
        fail = self._dispatcher.failed
        too_late = self._dispatcher.expired(task)  # it waited for a slot past its expiry
        if too_late is not None:
            self._slot_freed()
            await self._record(too_late, task)
            return
        try:
            try:
                await self._execute(task)
            finally:
                self._slot_freed()  # the handler is done: its end is written meanwhile
        except asyncio.CancelledError:
            if task.seq in self._revoked:
                self._revoked.discard(task.seq)
                self._refusals.log(
                    logging.WARNING,
                    "stale fence",
                    "stopped task %s: fence %d is stale (cancelled or taken over)",
                    task.task_id,
                    task.fence,
                    extra={**_ids(task), "fence": task.fence},
                )
                return
            # Shutdown past its grace period: give the task back as a failed attempt.
            await self._record(fail(task, "worker shut down mid-run", retryable=True), task)
            raise
        except PermanentFailure as error:
            end = fail(task, _describe(error), retryable=False)
        except TimeoutError as error:
            limit = self._timeout(task)
            if limit is None:  # the handler's own timeout, not ours: an ordinary failure
                end = fail(task, _describe(error), retryable=True)
            else:
                end = fail(
                    task, f"timed out after {limit} s", outcome=Outcome.TIMED_OUT, retryable=True
                )
        except Exception as error:
            end = fail(task, _describe(error), retryable=True)
        else:
            end = self._dispatcher.succeeded(task)
        await self._record(end, task)
        self.completed += 1

    async def _record(self, end: Finish, task: ClaimedTask) -> None:
        """Write an attempt's end (group-committed with other tasks' ends). A store that
        cannot take it now (restarting, cut off) is tried again with backoff while the
        lease lasts; the task stays in flight meanwhile, so heartbeats keep extending its
        lease once they get through. Only past the lease is the end given up: the reaper
        then retries the task (at least once, never lost)."""
        delay, tries = END_RETRY_FIRST_SECONDS, 0
        while True:
            try:
                written = await self._dispatcher.finish(end, task)
                break
            except Exception as error:
                tries += 1
                left = (self._lease_until(task) - self._dispatcher.now_ms()) / 1000
                if left <= 0:
                    self._refusals.log(
                        logging.WARNING,
                        "end lost",
                        "could not record the end of task %s before its lease ran out"
                        " (%d tries, last: %s); it will run again",
                        task.task_id,
                        tries,
                        _describe(error),
                        extra=_ids(task),
                    )
                    return
                if tries == 1:  # a store outage is told by the store's health
                    log_failure(
                        log,
                        error,
                        "could not record the end of task %s; retrying while its lease lasts",
                        task.task_id,
                    )
                await asyncio.sleep(min(delay, left))
                delay = min(delay * 2, END_RETRY_MAX_SECONDS)
        if written and tries:
            log.debug("recorded the end of an attempt after %d tries", tries + 1, extra=_ids(task))
        if written and end.outcome is not Outcome.SUCCEEDED:
            log_failed_attempt(log, task, end)
        elif not written:
            # After failed tries, an earlier one may have committed with its answer lost.
            maybe = " (or an earlier try recorded it)" if tries else ""
            self._refusals.log(
                logging.WARNING,
                "stale fence",
                "result of task %s refused: fence %d is stale%s",
                task.task_id,
                task.fence,
                maybe,
                extra={**_ids(task), "fence": task.fence},
            )

    def _lease_until(self, task: ClaimedTask) -> int:
        return self._leases.get(task.seq, task.lease_expires_ms)

    async def _execute(self, task: ClaimedTask) -> Any:
        kind = self._app.get(task.task_type)
        if kind is None:
            raise PermanentFailure(f"no handler is registered for task type {task.task_type!r}")
        if not self._tracing.enabled:  # no context manager per task when off
            return await self._call(kind, task, None)
        with self._tracing.running(task) as traceparent:
            return await self._call(kind, task, traceparent)

    async def _call(self, kind: TaskType, task: ClaimedTask, traceparent: str | None) -> Any:
        due = to_datetime(task.due_ms)
        assert due is not None
        ctx = TaskContext(
            task.task_id, task.task_type, task.attempt, due, task.fence, self.worker_id, traceparent
        )
        if kind.is_async:
            call = kind.handler(ctx, task.payload)
        else:
            loop = asyncio.get_running_loop()
            # A plain function cannot be interrupted: on timeout its thread runs on,
            # but its result is discarded and the attempt counts as timed out.
            if traceparent is None:
                call = loop.run_in_executor(self._threads, kind.handler, ctx, task.payload)
            else:  # the run's span stays current in the thread
                run = contextvars.copy_context().run
                call = loop.run_in_executor(self._threads, run, kind.handler, ctx, task.payload)
        timeout = self._timeout(task)
        if not timeout:
            return await call
        async with asyncio.timeout(timeout):
            return await call

    def _timeout(self, task: ClaimedTask) -> float | None:
        kind = self._app.get(task.task_type)
        return task.timeout_seconds or (kind.timeout_seconds if kind else None)

    # -- leases --------------------------------------------------------------

    async def _heartbeat(self) -> None:
        """Extend the lease of every claimed task in one write; stop the handlers of
        those whose fence is stale."""
        fences = {seq: task.fence for seq, (task, _) in self._inflight.items()}
        fences.update((task.seq, task.fence) for task in self._claimed)
        # At most what the dispatcher sets: it reads the clock after this.
        until = self._dispatcher.now_ms() + self._dispatcher.lease_ms
        stale = await self._dispatcher.heartbeat(fences)
        self._leases.update((seq, until) for seq in fences if seq not in stale)
        for seq in stale:
            self._revoked.add(seq)  # one still waiting for a slot is never started
            entry = self._inflight.get(seq)
            if entry is not None:
                entry[1].cancel()

    # -- being seen ----------------------------------------------------------

    def _report_loop(self, registry: WorkerStore) -> Periodic:
        """One upsert per interval, whatever the number of tasks."""
        beat = WorkerBeat(
            self.worker_id,
            "in_process",
            self._queues,
            self._concurrency,
            tuple(sorted(self._app.types)),  # the built-in types included
        )
        ttl_ms = round(self._report_seconds * 3000)
        return Periodic(
            "reporting this worker alive",
            functools.partial(registry.worker_seen, beat, ttl_ms=ttl_ms),
            clock=self._clock,
            every_seconds=self._report_seconds,
            log=log,
        )

    async def _stop_reports(self) -> None:
        if self._reports is None or self._registry is None:
            return
        self._reports.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await self._reports
        try:
            await self._registry.worker_left(self.worker_id)
        except Exception:  # its report lapses by itself
            log.exception("could not record that this worker stopped")

    # -- shutdown ------------------------------------------------------------

    async def stop(self, grace_seconds: float = 30.0) -> None:
        """Stop pulling, let in-flight tasks finish within the grace period, then
        interrupt the rest and give them back for a retry."""
        self._stopping = True
        self._room.set()
        for pull in list(self._pulls):
            pull.cancel()
        if self._heartbeats is not None:  # the pull loop ran: let claims in flight land
            await wait_event(self._pulling_done, self._poll + 5)
        await self._drain(grace_seconds)
        if self._heartbeats is not None:
            self._heartbeats.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._heartbeats
        await self._stop_reports()
        self._threads.shutdown(wait=False, cancel_futures=True)

    async def _drain(self, grace_seconds: float) -> None:
        """Run what is claimed (the tasks waiting start as slots free) until the grace
        period ends; then interrupt the rest and give every task back for a retry."""
        loop = asyncio.get_running_loop()
        deadline = loop.time() + grace_seconds
        while self._inflight and (left := deadline - loop.time()) > 0:
            runners = [runner for _, runner in self._inflight.values()]
            await asyncio.wait(runners, timeout=left, return_when=asyncio.FIRST_COMPLETED)
        self._starting = False  # past the grace period: start nothing more
        late = [runner for _, runner in self._inflight.values()]
        for runner in late:
            runner.cancel()
        await asyncio.gather(*late, return_exceptions=True)
        while self._claimed:
            task = self._claimed.popleft()
            ending = self._dispatcher.failed(
                task, "worker shut down before it started", retryable=True
            )
            await self._record(ending, task)

    @property
    def inflight(self) -> int:
        return len(self._inflight) + len(self._claimed)


def _describe(error: BaseException) -> str:
    return describe(error)[:MAX_ERROR_CHARS]


def _ids(task: ClaimedTask) -> dict[str, Any]:
    return {"task_id": task.task_id, "attempt": task.attempt}
