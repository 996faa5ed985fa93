"""A claim with no bound on what starts at once, the same for both stores."""

from __future__ import annotations

from collections.abc import Sequence

from tickwheel.models import ClaimedTask
from tickwheel.storage.records import Claimed


class UnboundedClaim:
    """`claim` from a store's `claim_some`."""

    async def claim_some(
        self,
        items: Sequence[tuple[int, int]],
        *,
        now_ms: int,
        lease_ms: int,
        worker_id: str,
        start_now: int | None,
    ) -> Claimed:
        raise NotImplementedError

    async def claim(
        self, items: Sequence[tuple[int, int]], *, now_ms: int, lease_ms: int, worker_id: str
    ) -> list[ClaimedTask]:
        found = await self.claim_some(
            items, now_ms=now_ms, lease_ms=lease_ms, worker_id=worker_id, start_now=None
        )
        return found.tasks
