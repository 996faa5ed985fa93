"""The body every system's task runs, Tickwheel's included: `record(run, index)`.

It appends "index start_ms" to a buffer of this process, under a lock; a daemon thread
ships the buffer to the sink's Redis lists every `INTERVAL_SECONDS`, one round trip a
batch (one RPUSH per run in it). So recording costs a task a list append in every
system alike, and nobody's throughput is Redis round trips. An async body calls the
same function: there is nothing to await.

Nothing recorded is lost when a worker stops politely: the buffer is shipped at exit,
by `atexit` and by the exit functions of `multiprocessing` and `billiard` (Celery's
pool), which a pool's child runs instead of `atexit` before its `os._exit`. A forked
child starts with an empty buffer and no thread (what its parent had recorded is the
parent's to ship) and starts its own thread at its first record. RQ's work horse ends
with a bare `os._exit` after its one task, running no exit function: its body is
`record_and_ship`.
"""

from __future__ import annotations

import atexit
import logging
import os
import sys
import threading
import time

import redis

from bench.peers.sink import key, sink_url

INTERVAL_SECONDS = 0.025
STOP_SECONDS = 10.0
# the exit functions a pool's forked child runs before `os._exit`, where `atexit` is not
EXIT_MODULES = ("multiprocessing.util", "billiard.util")

log = logging.getLogger(__name__)


class Recorder:
    """One process's buffer of records and the thread that ships it."""

    def __init__(self, url: str, interval_seconds: float = INTERVAL_SECONDS) -> None:
        self._url = url
        self._interval = interval_seconds
        self._lock = threading.Lock()  # guards the buffer and the thread's start
        self._shipping = threading.Lock()  # one shipment at a time, in order
        self._buffer: list[tuple[str, str]] = []  # (run, entry)
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self._client: redis.Redis | None = None
        self.shipments = 0  # round trips to Redis so far

    def record(self, run: str, index: int, *, ship: bool = False) -> None:
        """Note that task `index` of `run` started now; with `ship`, send it before
        returning rather than start the thread."""
        entry = f"{index} {time.time() * 1000:.3f}"
        with self._lock:
            self._buffer.append((run, entry))
            if self._thread is None and not ship:
                self._thread = threading.Thread(
                    target=self._ship_every_interval, name="bench-recorder", daemon=True
                )
                self._thread.start()
        if ship:
            self.ship()

    def ship(self) -> None:
        """Send what is buffered now, in one round trip; a failed batch is kept for the
        next one."""
        with self._shipping:
            with self._lock:
                batch, self._buffer = self._buffer, []
            if not batch:
                return
            by_run: dict[str, list[str]] = {}
            for run, entry in batch:
                by_run.setdefault(run, []).append(entry)
            if self._client is None:
                self._client = redis.Redis.from_url(self._url)
            pipe = self._client.pipeline(transaction=False)
            for run, entries in by_run.items():
                pipe.rpush(key(run), *entries)
            try:
                pipe.execute()
            except redis.RedisError:
                with self._lock:
                    self._buffer[:0] = batch
                raise
            self.shipments += 1

    def close(self) -> None:
        """Stop the thread and ship the rest."""
        self._stop.set()
        if self._thread is not None:
            self._thread.join(STOP_SECONDS)
        self.ship()
        if self._client is not None:
            self._client.close()
            self._client = None

    def _ship_every_interval(self) -> None:
        while not self._stop.wait(self._interval):
            try:
                self.ship()
            except redis.RedisError as error:
                log.warning("could not ship the records, trying again: %s", error)


_recorder: Recorder | None = None
_creating = threading.Lock()


def _current() -> Recorder:
    """This process's recorder, made at its first record."""
    global _recorder
    with _creating:
        if _recorder is None:
            _recorder = Recorder(sink_url(), INTERVAL_SECONDS)
            for name in EXIT_MODULES:
                module = sys.modules.get(name)
                if module is not None:  # registered here, since a pool's child clears them
                    module.Finalize(None, ship_at_exit, exitpriority=100)
        return _recorder


def record(run: str, index: int) -> None:
    """Record that task `index` of `run` started now: the whole body of every task."""
    _current().record(run, index)


def record_and_ship(run: str, index: int) -> None:
    """`record`, shipped before returning: for a process that runs one task and ends
    with `os._exit` (RQ's work horse), so no batch could form in it anyway."""
    _current().record(run, index, ship=True)


def ship_at_exit() -> None:
    """Ship what this process recorded and stop its thread (idempotent)."""
    global _recorder
    recorder, _recorder = _recorder, None
    if recorder is not None:
        recorder.close()


def _forget_after_fork() -> None:
    """In a forked child: a recorder of its own, made at its first record; the locks
    are new, since another thread of the parent may have held them at the fork."""
    global _recorder, _creating
    _recorder, _creating = None, threading.Lock()


atexit.register(ship_at_exit)
os.register_at_fork(after_in_child=_forget_after_fork)
