"""What both clients share: where the server is, the token, timeouts and retries."""

from __future__ import annotations

import os
import time
from collections.abc import Mapping
from typing import Any
from urllib.parse import urlencode, urlsplit

import msgspec

from tickwheel.client.calls import Call
from tickwheel.client.retries import Retries
from tickwheel.client.transport import NoAnswer, Timeouts
from tickwheel.config import env
from tickwheel.errors import Unreachable
from tickwheel.models import FINAL_STATUSES

DEFAULT_URL = "http://127.0.0.1:8700"
DEFAULT_TIMEOUT_SECONDS = 30.0
USER_AGENT = "tickwheel-client/0.1"


class ClientBase:
    def __init__(
        self,
        url: str | None,
        *,
        token: str | None,
        timeout_seconds: float,
        retries: Retries,
    ) -> None:
        """`url` and `token` default to `TICKWHEEL_URL` and `TICKWHEEL_TOKEN`."""
        self.url = server_url(url or os.environ.get(env("url")) or DEFAULT_URL)
        token = (token if token is not None else os.environ.get(env("token")) or "").strip()
        if any(not c.isprintable() or c.isspace() for c in token):
            raise ValueError("the API token holds spaces or control characters")
        self._headers = {"User-Agent": USER_AGENT}
        if token:
            self._headers["Authorization"] = f"Bearer {token}"
        self._json_headers = {**self._headers, "Content-Type": "application/json"}
        self._timeout_seconds = timeout_seconds
        self._retries = retries

    def _request(self, call: Call[Any]) -> tuple[str, bytes | None, Mapping[str, str]]:
        """What goes on the wire for `call`, the same for each of its tries: the target
        (path and query), the body, the headers."""
        target = f"{call.path}?{urlencode(call.params, doseq=True)}" if call.params else call.path
        if call.json is None:
            return target, None, {**self._headers, **call.headers}
        return target, msgspec.json.encode(call.json), {**self._json_headers, **call.headers}

    def _timeouts(self, call: Call[Any]) -> Timeouts:
        """A long poll may hold the answer back for its wait on top of the usual time."""
        return Timeouts(self._timeout_seconds, self._timeout_seconds + call.wait_seconds)

    def _wait_after(self, call: Call[Any], attempt: int, error: NoAnswer) -> float:
        """Seconds to wait before trying again after no answer came; raises
        `Unreachable` when the call is not tried again."""
        wait = self._retries.after_error(call, attempt, error)
        if wait is None:
            raise Unreachable(f"{call.method} {self.url}{call.path}: {error}") from error
        return wait

    def __repr__(self) -> str:
        return f"{type(self).__name__}({self.url!r})"  # never the token


def server_url(url: str) -> str:
    """`url` without its trailing slash; a `ValueError` that says what is wrong with it
    when it cannot name a server (a scheme other than http or https, no host, a port
    that is not a number)."""
    try:
        parts = urlsplit(url)
        parts.port  # noqa: B018 (parsed when read: a port that is not a number raises)
    except ValueError as error:
        raise ValueError(f"{url!r} is not a server URL: {error}") from None
    if parts.scheme not in ("http", "https") or not parts.hostname:
        raise ValueError(f"{url!r} is not a server URL: use http://HOST[:PORT]")
    return url.rstrip("/")


class Waiting:
    """Polls of a task until it finishes: the pauses between them, and the deadline."""

    final = frozenset(str(s) for s in FINAL_STATUSES)

    def __init__(self, task_id: str, timeout_seconds: float, poll_seconds: float) -> None:
        self._task_id = task_id
        self._deadline = time.monotonic() + timeout_seconds
        self._pause = poll_seconds

    def next_pause(self) -> float:
        """Seconds until the next poll; raises TimeoutError past the deadline."""
        left = self._deadline - time.monotonic()
        if left <= 0:
            raise TimeoutError(f"task {self._task_id} has not finished in time")
        return min(self._pause, left)
