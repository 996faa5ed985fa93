"""The SQLite writer's connection in a process of its own.

Embedded mode runs the API, the scheduler and the workers on one event loop, and the
writer (a claim, a batch of ends, a submission: about half the CPU of a burst) took
turns with that loop for the GIL, so `tickwheel up` never used more than one core. Here
the writer's `Session` lives in a child process: each call reaches it pickled
(cloudpickle, since works are closures), its answer comes back pickled, and the two
processes work at once.

The wire: frames of a 4-byte length and a pickle over a socket pair, answered in order.
A second socket pair carries interrupts (any byte), which a thread of the child turns
into `sqlite3.Connection.interrupt`. The child ends when its socket closes (the store
closed, or its process died); it ignores SIGINT and SIGTERM, which a terminal or a
supervisor sends to the whole process group, so that a graceful stop's last writes
still reach it.
"""

from __future__ import annotations

import asyncio
import contextlib
import io
import os
import pickle
import signal
import socket
import sqlite3
import struct
import subprocess
import sys
import threading
from collections import deque
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any, TypeVar

import cloudpickle

from tickwheel.errors import OutcomeUnknown, StoreUnavailable
from tickwheel.storage.sqlite.session import Session

T = TypeVar("T")

FRAME = struct.Struct("!I")
EXIT_SECONDS = 10.0  # for the child to finish its last call and close the file


class ProcessHost:
    """A `Session` in a child process, asked from asyncio. A child that dies fails the
    calls in flight with `OutcomeUnknown` (one may have committed) and is started
    again by the next call."""

    def __init__(self, path: str, name: str) -> None:
        self._path = path
        self._name = name
        self._child: asyncio.subprocess.Process | None = None
        self._stream: asyncio.StreamWriter | None = None
        self._control: socket.socket | None = None
        self._waiting: deque[asyncio.Future[tuple[bool, Any]]] = deque()
        self._answers: asyncio.Task[None] | None = None
        self._restarting = asyncio.Lock()

    async def start(self) -> None:
        calls, child_calls = socket.socketpair()
        control, child_control = socket.socketpair()
        fds = (child_calls.fileno(), child_control.fileno())
        self._child = await asyncio.create_subprocess_exec(
            *[sys.executable, "-m", __name__, *map(str, fds), self._path],
            pass_fds=fds,
            stdin=subprocess.DEVNULL,
            env=_child_environment(),
        )
        child_calls.close()
        child_control.close()
        reader, self._stream = await asyncio.open_connection(sock=calls)
        self._control = control
        self._answers = asyncio.create_task(self._read_answers(reader))

    async def ask(self, call: Callable[[Session], T]) -> T:
        if self._answers is None or self._answers.done():
            async with self._restarting:  # callers that found it dead start one child
                if self._answers is None or self._answers.done():
                    await self.close()
                    await self.start()
        assert self._stream is not None
        frame = cloudpickle.dumps(call, protocol=pickle.HIGHEST_PROTOCOL)
        answer = asyncio.get_running_loop().create_future()
        self._waiting.append(answer)
        self._stream.write(FRAME.pack(len(frame)) + frame)
        failed, value = await answer
        if failed:
            raise value
        result: T = value
        return result

    async def _read_answers(self, reader: asyncio.StreamReader) -> None:
        try:
            while True:
                (size,) = FRAME.unpack(await reader.readexactly(FRAME.size))
                answer = pickle.loads(await reader.readexactly(size))
                waiting = self._waiting.popleft()
                if not waiting.done():  # its caller was cancelled
                    waiting.set_result(answer)
        except (asyncio.IncompleteReadError, ConnectionError):
            gone = OutcomeUnknown(
                f"the SQLite {self._name}'s process for {self._path} ended (exit status"
                f" {self._child.returncode if self._child else None}); the last write may"
                " or may not have committed"
            )
            while self._waiting:
                waiting = self._waiting.popleft()
                if not waiting.done():
                    waiting.set_exception(gone)

    def interrupt(self) -> None:
        if self._control is not None:
            with contextlib.suppress(OSError):
                self._control.send(b"!")

    async def close(self) -> None:
        """Close the socket and wait for the child to close the file and exit."""
        if self._stream is not None:
            self._stream.close()
            with contextlib.suppress(OSError):
                await self._stream.wait_closed()
            self._stream = None
        if self._answers is not None:
            with contextlib.suppress(asyncio.CancelledError):
                await self._answers
            self._answers = None
        if self._control is not None:
            self._control.close()
            self._control = None
        if self._child is not None:
            await _reap(self._child)
            self._child = None


async def _reap(child: asyncio.subprocess.Process) -> None:
    try:
        await asyncio.wait_for(child.wait(), EXIT_SECONDS)
    except TimeoutError:
        child.kill()
        await child.wait()


def _child_environment() -> dict[str, str]:
    """The parent's environment, with this copy of Tickwheel first on the path."""
    package_parent = str(Path(__file__).resolve().parents[3])
    path = os.environ.get("PYTHONPATH")
    return {**os.environ, "PYTHONPATH": os.pathsep.join(filter(None, [package_parent, path]))}


class Row:
    """A row read by column name or by position, as `sqlite3.Row` is, that pickles."""

    __slots__ = ("_index", "_values")

    def __init__(self, values: tuple[Any, ...], index: dict[str | int, int]) -> None:
        self._values = values
        self._index = index  # names and positions -> position; one per statement

    def __getitem__(self, key: str | int) -> Any:
        return self._values[self._index[key]]

    def __iter__(self) -> Iterator[Any]:
        return iter(self._values)

    def __len__(self) -> int:
        return len(self._values)

    def keys(self) -> list[str]:
        return [key for key in self._index if isinstance(key, str)]

    def __reduce__(self) -> tuple[type[Row], tuple[tuple[Any, ...], dict[str | int, int]]]:
        return Row, (self._values, self._index)  # a pickle holds each index once


class PicklableRows:
    """Makes `Row`s, sharing one index among the rows of a statement."""

    def __init__(self) -> None:
        self._description: Any = None
        self._index: dict[str | int, int] = {}

    def __call__(self, cursor: sqlite3.Cursor, values: tuple[Any, ...]) -> Row:
        if cursor.description is not self._description:
            self._description = cursor.description
            index: dict[str | int, int] = {}
            for position, column in enumerate(cursor.description):
                index[column[0]] = index[position] = position
            self._index = index
        return Row(values, self._index)


def serve(calls: socket.socket, control: socket.socket, path: str) -> None:
    """The child: answer calls in order until the parent closes the socket."""
    session = Session(path, PicklableRows())
    threading.Thread(target=_interrupts, args=(control, session), daemon=True).start()
    with calls.makefile("rwb") as stream:
        while (frame := _read_frame(stream)) is not None:
            stream.write(_answer(session, frame))
            stream.flush()
    session.close()


def _read_frame(stream: io.BufferedIOBase) -> bytes | None:
    header = stream.read(FRAME.size)
    if len(header) < FRAME.size:
        return None
    (size,) = FRAME.unpack(header)
    return stream.read(size)


def _answer(session: Session, frame: bytes) -> bytes:
    try:
        answer: tuple[bool, Any] = (False, pickle.loads(frame)(session))
    except Exception as error:
        answer = (True, error)
    try:
        payload = pickle.dumps(answer, protocol=pickle.HIGHEST_PROTOCOL)
    except Exception as error:  # a bug: a work returned what cannot cross processes
        failure = StoreUnavailable(f"the SQLite writer cannot send its answer back: {error!r}")
        payload = pickle.dumps((True, failure), protocol=pickle.HIGHEST_PROTOCOL)
    return FRAME.pack(len(payload)) + payload


def _interrupts(control: socket.socket, session: Session) -> None:
    while control.recv(64):
        session.interrupt()


if __name__ == "__main__":
    # Rows pickle as this module's, not as `__main__`'s, for the parent to load them.
    from tickwheel.storage.sqlite.writer_process import serve as serve_here

    for stop in (signal.SIGINT, signal.SIGTERM):
        signal.signal(stop, signal.SIG_IGN)
    calls_fd, control_fd, file_path = sys.argv[1:4]
    serve_here(
        socket.socket(fileno=int(calls_fd)),
        socket.socket(fileno=int(control_fd)),
        file_path,
    )
