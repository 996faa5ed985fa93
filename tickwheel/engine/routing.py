"""Packs what a due task needs for routing into the wheel's integer key.

The wheel stores two machine integers per task to stay compact; the key carries the
task's seq and a 24-bit tag: its queue (interned), its priority and whether it is a
cron instance, so releasing a task needs no store read.
"""

from __future__ import annotations

from typing import NamedTuple

from tickwheel.models import PRIORITY_MIN

_TAG_BITS = 24
_QUEUE_LIMIT = 1 << 15
_SEQ_LIMIT = 1 << (63 - _TAG_BITS)


class Route(NamedTuple):
    seq: int
    queue: str
    priority: int
    is_cron: bool


class RoutingKeys:
    """Interns queue names for the life of one engine."""

    def __init__(self) -> None:
        self._index: dict[str, int] = {}
        self._names: list[str] = []

    def key(self, seq: int, queue: str, priority: int, is_cron: bool) -> int:
        if not 0 < seq < _SEQ_LIMIT:
            raise ValueError(f"seq {seq} out of range")
        index = self._index.get(queue)
        if index is None:
            if len(self._names) >= _QUEUE_LIMIT:
                raise ValueError("too many distinct queues")
            index = self._index[queue] = len(self._names)
            self._names.append(queue)
        tag = index << 9 | int(is_cron) << 8 | (priority - PRIORITY_MIN)
        return seq << _TAG_BITS | tag

    @staticmethod
    def is_cron(key: int) -> bool:
        return bool(key >> 8 & 1)

    def route(self, key: int) -> Route:
        tag = key & ((1 << _TAG_BITS) - 1)
        return Route(
            seq=key >> _TAG_BITS,
            queue=self._names[tag >> 9],
            priority=(tag & 0xFF) + PRIORITY_MIN,
            is_cron=bool(tag >> 8 & 1),
        )
