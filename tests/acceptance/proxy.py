"""A TCP proxy a test can freeze or slow down. Frozen, bytes stop flowing both ways
(connections stay open), so the process behind it hangs on its next round trip, as
over a cut network link; slowed, each chunk is held back `delay` seconds (plus up to
`jitter`) in each direction, in order, as over a far link. It stands between one
process and a service, and never touches the service itself."""

from __future__ import annotations

import queue
import random
import select
import socket
import threading
import time
from types import TracebackType

Line = queue.Queue[tuple[float, bytes] | None]  # chunks and when to deliver them


class Proxy:
    def __init__(self, host: str, port: int) -> None:
        self._upstream = (host, port)
        self._listener = socket.create_server(("127.0.0.1", 0))
        self.port: int = self._listener.getsockname()[1]
        self._flowing = threading.Event()
        self._flowing.set()
        self._closed = threading.Event()
        self._sockets: list[socket.socket] = []
        self._delay = (0.0, 0.0)
        threading.Thread(target=self._accept, daemon=True).start()

    def freeze(self) -> None:
        self._flowing.clear()

    def thaw(self) -> None:
        self._flowing.set()

    def slow(self, delay: float, jitter: float = 0.0) -> None:
        """Hold every chunk back `delay` seconds plus up to `jitter` more, each way;
        `slow(0)` ends it (for chunks read from then on)."""
        self._delay = (delay, jitter)

    def close(self) -> None:
        self._closed.set()
        self._flowing.set()
        for s in [self._listener, *self._sockets]:
            s.close()

    def __enter__(self) -> Proxy:
        return self

    def __exit__(
        self,
        kind: type[BaseException] | None,
        error: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.close()

    def _accept(self) -> None:
        while not self._closed.is_set():
            try:
                client, _ = self._listener.accept()
                server = socket.create_connection(self._upstream)
            except OSError:
                return
            self._sockets += [client, server]
            for source, sink in ((client, server), (server, client)):
                line: Line = queue.Queue()
                threading.Thread(target=self._read, args=(source, line), daemon=True).start()
                threading.Thread(target=self._deliver, args=(line, sink), daemon=True).start()

    def _read(self, source: socket.socket, line: Line) -> None:
        try:
            while not self._closed.is_set():
                readable, _, _ = select.select([source], [], [], 0.1)
                if not readable:
                    continue
                self._flowing.wait()
                data = source.recv(65536)
                if not data:
                    return
                delay, jitter = self._delay
                line.put((time.monotonic() + delay + random.uniform(0, jitter), data))
        except (OSError, ValueError):  # closed under select
            return
        finally:
            line.put(None)

    def _deliver(self, line: Line, sink: socket.socket) -> None:
        """Send each chunk when its time comes, in the order read: a connection's bytes
        never overtake each other, as on TCP."""
        try:
            while (chunk := line.get()) is not None:
                at, data = chunk
                time.sleep(max(0.0, at - time.monotonic()))
                sink.sendall(data)
        except OSError:
            pass
        finally:
            sink.close()
