"""A TCP proxy between one process and a service, which a test can freeze (bytes stop
flowing both ways and connections stay open, as over a link gone silent), cut (every
connection reset and new ones refused, as when the service is unreachable) or slow
(each chunk held back a delay, give or take a jitter). It never touches the service."""

from __future__ import annotations

import random
import select
import socket
import struct
import threading
import time
from types import TracebackType


class Proxy:
    def __init__(self, host: str, port: int) -> None:
        self._upstream = (host, port)
        self._listener = socket.create_server(("127.0.0.1", 0))
        self.port: int = self._listener.getsockname()[1]
        self._flowing = threading.Event()
        self._flowing.set()
        self._closed = threading.Event()
        self._refusing = False
        self._delay = self._jitter = 0.0
        self._lock = threading.Lock()
        self._sockets: list[socket.socket] = []
        self.sent = 0  # chunks from the clients to the service: a request's writes
        threading.Thread(target=self._accept, daemon=True).start()

    def url_for(self, url: str) -> str:
        """`url` (of the proxied service) with this proxy's address instead."""
        scheme, rest = url.split("://", 1)
        credentials, _, tail = rest.rpartition("@")
        path = tail[tail.index("/") :] if "/" in tail else ""
        return f"{scheme}://{credentials + '@' if credentials else ''}127.0.0.1:{self.port}{path}"

    def freeze(self) -> None:
        self._flowing.clear()

    def thaw(self) -> None:
        self._flowing.set()

    def cut(self) -> None:
        """Resets every connection and refuses new ones until `restore`."""
        with self._lock:
            self._refusing = True
            open_now, self._sockets = self._sockets, []
        for s in open_now:
            _reset(s)

    def restore(self) -> None:
        with self._lock:
            self._refusing = False

    def slow(self, delay: float, jitter: float = 0.0) -> None:
        """Holds each chunk back `delay` seconds, plus or minus up to `jitter`."""
        self._delay, self._jitter = delay, jitter

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
            except OSError:
                return
            with self._lock:
                refusing = self._refusing
            if refusing:
                _reset(client)
                continue
            try:
                server = socket.create_connection(self._upstream)
            except OSError:
                _reset(client)
                continue
            with self._lock:
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
                    self._hold_back()
                    peer[source].sendall(data)
                    if source is a:
                        with self._lock:
                            self.sent += 1
        except (OSError, ValueError):  # reset, or closed by `cut`
            return
        finally:
            a.close()
            b.close()

    def _hold_back(self) -> None:
        if self._delay or self._jitter:
            time.sleep(max(0.0, self._delay + random.uniform(-self._jitter, self._jitter)))


def _reset(s: socket.socket) -> None:
    """Closes `s` with a reset (RST), not an orderly close: the peer sees the link die."""
    try:
        s.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
        s.close()
    except OSError:
        pass
