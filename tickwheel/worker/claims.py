"""What a worker needs of whoever hands it tasks: claims, leases and ends of attempts.

The worker declares it and the engine's `Dispatcher` has it, so the worker imports
nothing of the engine; the composition root (`tickwheel.node`) hands one to the other.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Protocol

from tickwheel.models import ClaimedTask, Finish, Outcome
from tickwheel.queue.base import ReadyItem
from tickwheel.storage.records import Claimed


class Claims(Protocol):
    @property
    def lease_ms(self) -> int:
        """How long a claim or a heartbeat holds a task."""
        ...

    def now_ms(self) -> int:
        """The cluster's time, by which leases run out."""
        ...

    async def claim(
        self, items: Sequence[ReadyItem], worker_id: str, *, start_now: int | None = None
    ) -> Claimed:
        """Take the released tasks still due; those cancelled or taken are left out, and
        those a limit holds back. Of the tasks under a limit, at most `start_now` (the
        free slots) are taken, first in the answer; the rest go back on the queue
        (`deferred`)."""
        ...

    async def heartbeat(self, fences: Mapping[int, int]) -> set[int]:
        """Extend the leases; return the seqs whose fence is stale."""
        ...

    def succeeded(self, task: ClaimedTask) -> Finish: ...

    def expired(self, task: ClaimedTask) -> Finish | None:
        """The end of a claimed task whose expiry came before it started, if it did."""
        ...

    def failed(
        self, task: ClaimedTask, error: str, *, outcome: Outcome = ..., retryable: bool
    ) -> Finish: ...

    async def finish(self, end: Finish, task: ClaimedTask | None = None) -> bool:
        """Write the end of an attempt; False when the fence was stale."""
        ...
