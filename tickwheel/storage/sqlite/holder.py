"""The lock a scheduling process holds on its SQLite file, so that a dead one is known.

A partition lease outlives a process killed with -9: another process waits for it to
lapse, since the holder might only be slow. On one host there is better evidence. Each
process that schedules from the file tries to hold an OS lock (`flock`) on
`<file>.lock` for its whole life, and writes its pid and node id into that file. The
kernel lets the lock go when the process dies, however it dies; so a process that gets
the lock knows that the previous holder, named in the file, is gone, and frees its
leases at once. A process that cannot get it knows another live process schedules from
the same file; it says so, and tries again at each renewal.
"""

from __future__ import annotations

import fcntl
import os


class HolderLock:
    def __init__(self, db_path: str) -> None:
        self.path = f"{db_path}.lock"
        self._fd: int | None = None

    @property
    def held(self) -> bool:
        return self._fd is not None

    def take(self, node_id: str) -> str | None:
        """Hold the lock if it is free; return the node id of the holder before (its
        leases are a dead process's), or "" when none is named. Raises `BlockingIOError`
        while another live process holds it."""
        fd = os.open(self.path, os.O_RDWR | os.O_CREAT, 0o644)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BaseException:
            os.close(fd)
            raise
        previous = os.pread(fd, 4096, 0).decode(errors="replace").split()
        os.ftruncate(fd, 0)
        os.pwrite(fd, f"{os.getpid()} {node_id}\n".encode(), 0)
        self._fd = fd
        return previous[1] if len(previous) == 2 else ""

    def holder(self) -> str:
        """Who holds the lock, as the holder wrote it ("pid node-id"), for messages."""
        try:
            with open(self.path, encoding="utf-8", errors="replace") as file:
                return file.read().strip() or "unknown"
        except OSError:
            return "unknown"

    def release(self) -> None:
        if self._fd is not None:
            os.close(self._fd)  # closing the file lets the lock go
            self._fd = None
