"""Group commit: many callers, one store round trip.

Callers await their own item; one flusher takes everything that queued up while
the previous flush ran and writes it as one batch. Under load batches grow by
themselves; when idle, a lone item is written at once.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable, Sequence
from typing import Generic, TypeVar

from tickwheel.errors import RejectedItems

T = TypeVar("T")
R = TypeVar("R")


class Batcher(Generic[T, R]):
    """Items submitted together (`submit_many`) stay together: they are written in the
    same flush, so a caller's batch commits whole or not at all."""

    def __init__(
        self, flush: Callable[[list[T]], Awaitable[Sequence[R]]], *, max_batch: int = 5000
    ) -> None:
        self._flush = flush
        self._max_batch = max_batch
        self._waiting: list[tuple[Sequence[T], asyncio.Future[list[R]]]] = []
        self._flusher: asyncio.Task[None] | None = None

    async def submit(self, item: T) -> R:
        (result,) = await self.submit_many([item])
        return result

    async def submit_many(self, items: Sequence[T]) -> list[R]:
        if not items:
            return []
        future: asyncio.Future[list[R]] = asyncio.get_running_loop().create_future()
        self._waiting.append((items, future))
        if self._flusher is None or self._flusher.done():
            self._flusher = asyncio.create_task(self._run())
        return await future

    def _next_groups(self) -> list[tuple[Sequence[T], asyncio.Future[list[R]]]]:
        """Whole groups up to `max_batch` items (a larger group goes alone)."""
        taken, size = 0, 0
        for items, _ in self._waiting:
            if taken and size + len(items) > self._max_batch:
                break
            taken, size = taken + 1, size + len(items)
        groups = self._waiting[:taken]
        del self._waiting[:taken]
        return groups

    def _fail_rejected(
        self, groups: list[tuple[Sequence[T], asyncio.Future[list[R]]]], rejected: RejectedItems
    ) -> None:
        """The flush wrote nothing: fail the groups holding a refused item (indexes made
        relative to the group) and flush the others again, first. A refused group whose
        caller was cancelled is dropped: its future is done, and failing it would raise."""
        start, others = 0, []
        for items, future in groups:
            end = start + len(items)
            mine = {i - start: e for i, e in rejected.errors.items() if start <= i < end}
            if mine:
                if not future.done():
                    future.set_exception(RejectedItems(mine))
            else:
                others.append((items, future))
            start = end
        self._waiting[:0] = others

    async def _run(self) -> None:
        while self._waiting:
            groups = self._next_groups()
            batch = [item for items, _ in groups for item in items]
            try:
                results = await self._flush(batch)
                if len(results) != len(batch):
                    raise RuntimeError(f"flush answered {len(results)} of {len(batch)} items")
            except RejectedItems as rejected:
                self._fail_rejected(groups, rejected)
                continue
            except BaseException as error:
                for _, future in groups:
                    if not future.done():
                        future.set_exception(error)
                if isinstance(error, asyncio.CancelledError):
                    raise
                continue
            start = 0
            for items, future in groups:
                if not future.done():
                    future.set_result(list(results[start : start + len(items)]))
                start += len(items)
