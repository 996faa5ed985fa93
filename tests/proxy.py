"""A TCP proxy a test can freeze or cut, standing between one process and a service and
never touching the service itself.

Frozen, bytes stop flowing both ways (connections stay open), so the process behind it
hangs on its next round trip, as over a stalled network link. Cut, every connection is
closed and new ones are closed as soon as they arrive, as when the service restarts or
the link drops: the process behind it gets connection errors until it is restored."""

from __future__ import annotations

import contextlib
import select
import socket
import threading
from types import TracebackType


class Proxy:
    def __init__(self, host: str, port: int) -> None:
        self._upstream = (host, port)
        self._listener = socket.create_server(("127.0.0.1", 0))
        self.port: int = self._listener.getsockname()[1]
        self._flowing = threading.Event()
        self._flowing.set()
        self._cut = threading.Event()
        self._closed = threading.Event()
        self._sockets: list[socket.socket] = []
        threading.Thread(target=self._accept, daemon=True).start()

    def freeze(self) -> None:
        self._flowing.clear()

    def thaw(self) -> None:
        self._flowing.set()

    def cut(self) -> None:
        self._cut.set()
        for s in list(self._sockets):
            _drop(s)

    def restore(self) -> None:
        self._cut.clear()

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
                if self._cut.is_set():  # the link is down: no answer
                    _drop(client)
                    continue
                server = socket.create_connection(self._upstream)
            except OSError:
                return
            self._sockets += [client, server]
            threading.Thread(target=self._pump, args=(client, server), daemon=True).start()

    def _pump(self, a: socket.socket, b: socket.socket) -> None:
        peer = {a: b, b: a}
        try:
            while not self._closed.is_set():
                readable, _, _ = select.select([a, b], [], [], 0.1)
                for source in readable:
                    self._flowing.wait()
                    data = source.recv(65536)
                    if not data:
                        return
                    peer[source].sendall(data)
        except OSError:
            return
        finally:
            a.close()
            b.close()


def _drop(s: socket.socket) -> None:
    """Close at once, waking a pump blocked on it."""
    with contextlib.suppress(OSError):
        s.shutdown(socket.SHUT_RDWR)
    s.close()
