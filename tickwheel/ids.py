"""Task identifiers and their partitions."""

from __future__ import annotations

import os
import re
import time
import uuid
import zlib

# A UUID as one text only: lowercase, hyphenated (what `str(uuid.UUID(...))` gives).
UUID_PATTERN = r"^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$"
_CANONICAL_UUID = re.compile(UUID_PATTERN)


def new_id() -> str:
    """A UUIDv7: time-ordered, so new rows land at the end of the id index."""
    ms = time.time_ns() // 1_000_000
    rand = int.from_bytes(os.urandom(10), "big")
    value = (ms & ((1 << 48) - 1)) << 80 | rand & ((1 << 80) - 1)
    value = value & ~(0xF << 76) | (0x7 << 76)  # version 7
    value = value & ~(0x3 << 62) | (0x2 << 62)  # RFC 4122 variant
    return str(uuid.UUID(int=value))


def partition_of(task_id: str, partitions: int) -> int:
    """The partition that owns a task: stable across processes and hosts."""
    return zlib.crc32(task_id.encode()) % partitions


def is_canonical_uuid(text: str) -> bool:
    return _CANONICAL_UUID.match(text) is not None and len(text) == 36
