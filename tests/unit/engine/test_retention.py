"""Retention's choices, without a database: the cutoff a pass deletes below (by the
injected clock) and the walk of batches a pass makes over an embedded store."""

from __future__ import annotations

from tickwheel.clock import ManualClock
from tickwheel.engine.retention import Retention, RowRetention, retention_for
from tickwheel.storage.base import Pruned

DAY_MS = 86_400_000
NOW = 100 * DAY_MS


class Batches:
    """A `PrunedTaskStore` that answers each batch from a script and records the asks."""

    def __init__(self, *answers: Pruned) -> None:
        self.asked: list[tuple[int, int, int]] = []  # (ended before, after seq, batch)
        self._answers = list(answers)

    async def delete_ended_tasks(
        self, *, ended_before_ms: int, after_seq: int, batch: int
    ) -> Pruned:
        self.asked.append((ended_before_ms, after_seq, batch))
        return self._answers.pop(0)


class Ranges:
    async def roll_task_ranges(self, *, period_ms: int) -> int:
        return 0

    async def drop_expired_task_ranges(self, *, retention_ms: int) -> int:
        return 0


def keeping(store: Batches, days: float | None, *, window_days: float = 1.0) -> RowRetention:
    return RowRetention(
        store=store,
        clock=ManualClock(NOW),
        retention_seconds=None if days is None else days * 86400,
        idempotency_window_seconds=window_days * 86400,
        batch=1000,
    )


async def test_a_pass_walks_on_from_where_each_batch_stopped_until_none_is_left() -> None:
    store = Batches(Pruned(1000, 1400), Pruned(0, 2400), Pruned(7, None))
    assert await keeping(store, 30).once() == 1007
    cutoff = NOW - 30 * DAY_MS
    assert store.asked == [(cutoff, 0, 1000), (cutoff, 1400, 1000), (cutoff, 2400, 1000)]


async def test_each_pass_starts_again_from_the_oldest_task() -> None:
    store = Batches(Pruned(1, None), Pruned(0, None))
    retention = keeping(store, 30)
    await retention.once()
    await retention.once()
    assert [after for _, after, _ in store.asked] == [0, 0]


async def test_the_cutoff_follows_the_clock() -> None:
    clock = ManualClock(NOW)
    retention = RowRetention(store=Batches(), clock=clock, retention_seconds=30 * 86400)
    assert retention.cutoff_ms() == NOW - 30 * DAY_MS
    clock.advance(86400)
    assert retention.cutoff_ms() == NOW - 29 * DAY_MS


async def test_without_retention_nothing_is_looked_at() -> None:
    store = Batches()
    retention = keeping(store, None)
    assert retention.cutoff_ms() is None
    assert await retention.once() == 0
    assert store.asked == []


async def test_a_task_is_kept_at_least_as_long_as_the_idempotency_window() -> None:
    # A repeated submission within the window must find the task it made.
    assert keeping(Batches(), 0.25).cutoff_ms() == NOW - DAY_MS
    assert keeping(Batches(), 0, window_days=2).cutoff_ms() == NOW - 2 * DAY_MS
    assert keeping(Batches(), 3, window_days=2).cutoff_ms() == NOW - 3 * DAY_MS


def test_each_store_gets_the_retention_it_keeps() -> None:
    def of(store: object) -> object:
        return retention_for(
            store,
            clock=ManualClock(NOW),
            range_seconds=86400,
            retention_seconds=30 * 86400,
            idempotency_window_seconds=86400,
        )

    assert isinstance(of(Ranges()), Retention)
    assert isinstance(of(Batches()), RowRetention)
    assert of(object()) is None
