"""Group commit: many callers, one store round trip.

Callers await their own item; one flusher takes everything that queued up while
the previous flush ran and writes it as one batch. Under load batches grow by
themselves; when idle, a lone item is written at once.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable, Sequence
from typing import Generic, TypeVar

T = TypeVar("T")
R = TypeVar("R")


class Batcher(Generic[T, R]):
    def __init__(
        self, flush: Callable[[list[T]], Awaitable[Sequence[R]]], *, max_batch: int = 5000
    ) -> None:
        self._flush = flush
        self._max_batch = max_batch
        self._waiting: list[tuple[T, asyncio.Future[R]]] = []
        self._flusher: asyncio.Task[None] | None = None

    async def submit(self, item: T) -> R:
        (result,) = await self.submit_many([item])
        return result

    async def submit_many(self, items: Sequence[T]) -> list[R]:
        loop = asyncio.get_running_loop()
        futures = [loop.create_future() for _ in items]
        self._waiting.extend(zip(items, futures, strict=True))
        if self._flusher is None or self._flusher.done():
            self._flusher = asyncio.create_task(self._run())
        return list(await asyncio.gather(*futures))

    async def _run(self) -> None:
        while self._waiting:
            batch = self._waiting[: self._max_batch]
            del self._waiting[: self._max_batch]
            try:
                results = await self._flush([item for item, _ in batch])
                if len(results) != len(batch):
                    raise RuntimeError(f"flush answered {len(results)} of {len(batch)} items")
            except BaseException as error:
                for _, future in batch:
                    if not future.done():
                        future.set_exception(error)
                if isinstance(error, asyncio.CancelledError):
                    raise
                continue
            for (_, future), result in zip(batch, results, strict=True):
                if not future.done():
                    future.set_result(result)
