"""How a client's requests reach the server: kept-alive HTTP/1.1 connections.

Chosen by measurement (`bench/client_latency.py`, on loopback): `http.client` for the
blocking client costs what a raw `POST` costs, where httpx added about a millisecond a
call; aiohttp for the asyncio client adds about 0.4 ms to hand-written HTTP on a stream,
where httpx added 1.8 ms. aiohttp is imported on a client's first call, not with
`tickwheel`.

Both speak the same small language: a request is a method, a target (path and query), a
body and headers; its outcome is a `Reply`, or `NoAnswer`, which says whether the request
may have reached the server (what `Retries` needs to know).
"""

from __future__ import annotations

import http.client
import select
from collections.abc import Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any
from urllib.parse import urlsplit

if TYPE_CHECKING:
    import aiohttp

MAX_IDLE_CONNECTIONS = 20


@dataclass(frozen=True, slots=True)
class Reply:
    status: int
    retry_after: str | None
    body: bytes


class NoAnswer(Exception):
    """No answer came. `sent` is False only when the request surely did not reach the
    server (no connection was made), so that any call may be tried again."""

    def __init__(self, detail: str, *, sent: bool) -> None:
        super().__init__(detail)
        self.sent = sent


@dataclass(frozen=True, slots=True)
class Timeouts:
    connect_seconds: float  # to make a connection (or wait for one)
    read_seconds: float  # for each read or write once connected


def _detail(error: BaseException) -> str:
    """What a failure says, without quoting what was sent (a header holds the token):
    the text of an OS error or a timeout, only the kind of anything else."""
    text = str(error) if isinstance(error, OSError | TimeoutError) else ""
    return text or type(error).__name__


class Connections:
    """Blocking HTTP/1.1 to one server over kept-alive `http.client` connections: each
    request takes an idle one (or opens one) and gives it back, so threads may share a
    client."""

    def __init__(self, url: str) -> None:
        parts = urlsplit(url)
        self._https = parts.scheme == "https"
        self._host = parts.hostname or ""
        self._port = parts.port
        self._prefix = parts.path.rstrip("/")  # a server mounted below a path
        self._idle: list[http.client.HTTPConnection] = []  # append and pop are atomic

    def send(
        self,
        method: str,
        target: str,
        body: bytes | None,
        headers: Mapping[str, str],
        timeouts: Timeouts,
    ) -> Reply:
        connection = self._take(timeouts.connect_seconds)
        try:
            assert connection.sock is not None
            connection.sock.settimeout(timeouts.read_seconds)
            connection.request(method, self._prefix + target, body, dict(headers))
            response = connection.getresponse()
            content = response.read()
        except (OSError, http.client.HTTPException) as error:
            connection.close()
            raise NoAnswer(_detail(error), sent=True) from error
        if response.will_close or len(self._idle) >= MAX_IDLE_CONNECTIONS:
            connection.close()
        else:
            self._idle.append(connection)
        return Reply(response.status, response.getheader("retry-after"), content)

    def _take(self, connect_seconds: float) -> http.client.HTTPConnection:
        while True:
            try:
                connection = self._idle.pop()
            except IndexError:
                break
            if connection.sock is not None and not _readable(connection.sock):
                return connection
            connection.close()  # the server closed it while idle (or said something unasked)
        kind = http.client.HTTPSConnection if self._https else http.client.HTTPConnection
        connection = kind(self._host, self._port, timeout=connect_seconds)
        try:
            connection.connect()
        except OSError as error:
            connection.close()
            raise NoAnswer(_detail(error), sent=False) from error
        return connection

    def close(self) -> None:
        while self._idle:
            self._idle.pop().close()


def _readable(sock: Any) -> bool:
    """Whether an idle connection has something to read: only its end, or garbage."""
    return bool(select.select([sock], [], [], 0)[0])


class AsyncConnections:
    """Asyncio HTTP/1.1 to one server through an aiohttp session, made on the first
    request (inside the event loop that uses it)."""

    def __init__(self, url: str) -> None:
        self._url = url
        self._session: aiohttp.ClientSession | None = None

    async def send(
        self,
        method: str,
        target: str,
        body: bytes | None,
        headers: Mapping[str, str],
        timeouts: Timeouts,
    ) -> Reply:
        import aiohttp
        from yarl import URL

        if self._session is None:
            self._session = aiohttp.ClientSession()
        timeout = aiohttp.ClientTimeout(
            total=None, connect=timeouts.connect_seconds, sock_read=timeouts.read_seconds
        )
        try:
            async with self._session.request(
                method,
                URL(self._url + target, encoded=True),  # as escaped by the call, not again
                data=body,
                headers=headers,
                timeout=timeout,
                allow_redirects=False,
            ) as response:
                content = await response.read()
                return Reply(response.status, response.headers.get("retry-after"), content)
        except (aiohttp.ClientConnectorError, aiohttp.ConnectionTimeoutError) as error:
            raise NoAnswer(_detail(error), sent=False) from error
        except (aiohttp.ClientError, TimeoutError) as error:
            raise NoAnswer(_detail(error), sent=True) from error

    async def close(self) -> None:
        if self._session is not None:
            await self._session.close()
            self._session = None
