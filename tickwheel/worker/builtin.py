"""Task types that need no code: `noop` and `http`."""

from __future__ import annotations

import re
from typing import Any
from urllib.parse import urlsplit

import aiohttp

from tickwheel.errors import InvalidRequest, PermanentFailure
from tickwheel.worker.context import TaskContext
from tickwheel.worker.http_policy import HttpPolicy
from tickwheel.worker.registry import App

_TOKEN = re.compile(r"[!#$%&'*+.^_`|~0-9A-Za-z-]{1,256}")
_UNSAFE = re.compile(r"[\x00-\x1f\x7f]")
METHODS = {"GET", "POST", "PUT", "PATCH", "DELETE", "HEAD"}
RETRYABLE_STATUS = {408, 429}
MAX_HTTP_TIMEOUT = 3600.0
DEFAULT_HTTP_TIMEOUT = 30.0

builtins = App()


@builtins.task("noop")
async def noop(ctx: TaskContext, payload: Any) -> None:
    """Does nothing: for tests, benchmarks and health checks of the pipeline."""


def check_http_payload(payload: Any, policy: HttpPolicy | None = None) -> None:
    if not isinstance(payload, dict):
        raise InvalidRequest("payload", "an http task's payload is an object with a url")
    url = payload.get("url")
    if not isinstance(url, str):
        raise InvalidRequest("payload.url", "an absolute http:// or https:// URL is required")
    try:
        parts = urlsplit(url)
        parts.port  # noqa: B018  (raises for a port out of range)
    except ValueError as error:
        raise InvalidRequest("payload.url", f"not a URL: {error}") from None
    if parts.scheme not in ("http", "https"):
        raise InvalidRequest("payload.url", "an absolute http:// or https:// URL is required")
    if not parts.hostname or _UNSAFE.search(url):
        raise InvalidRequest("payload.url", "the URL has no host or has control characters")
    refusal = policy.refusal(parts.hostname) if policy else None
    if refusal:
        raise InvalidRequest("payload.url", refusal)
    method = payload.get("method", "POST")
    if not isinstance(method, str) or method.upper() not in METHODS:
        raise InvalidRequest("payload.method", f"one of {', '.join(sorted(METHODS))}")
    headers = payload.get("headers", {})
    if not isinstance(headers, dict) or not all(
        isinstance(k, str) and _TOKEN.fullmatch(k) and isinstance(v, str) and not _UNSAFE.search(v)
        for k, v in headers.items()
    ):
        raise InvalidRequest(
            "payload.headers", "an object of header names to string values without line breaks"
        )
    if not isinstance(payload.get("body"), str | dict | list | None):
        raise InvalidRequest("payload.body", "a string (sent as is) or JSON object or array")
    timeout = payload.get("timeout_seconds", DEFAULT_HTTP_TIMEOUT)
    if isinstance(timeout, bool) or not isinstance(timeout, int | float):
        raise InvalidRequest("payload.timeout_seconds", "a number of seconds")
    if not 0 < timeout <= MAX_HTTP_TIMEOUT:
        raise InvalidRequest("payload.timeout_seconds", f"a number in (0, {MAX_HTTP_TIMEOUT}]")


class HttpCaller:
    """One connection pool shared by every http task of a worker.

    aiohttp rather than httpx here: a burst of calls is bound by the client's per-request
    CPU cost, and aiohttp's is several times lower.
    """

    def __init__(self, policy: HttpPolicy | None = None) -> None:
        self.policy = policy or HttpPolicy()
        self._session: aiohttp.ClientSession | None = None

    def _client(self) -> aiohttp.ClientSession:
        if self._session is None:  # made inside the running loop, on first use
            connector = aiohttp.TCPConnector(limit=200, ttl_dns_cache=60)
            self._session = aiohttp.ClientSession(connector=connector, trust_env=False)
        return self._session

    async def __call__(self, ctx: TaskContext, payload: dict[str, Any]) -> None:
        body = payload.get("body")
        headers = {
            **payload.get("headers", {}),
            "X-Tickwheel-Task-Id": ctx.task_id,
            "X-Tickwheel-Attempt": str(ctx.attempt),
            "Idempotency-Key": ctx.idempotency_key,
        }
        if ctx.traceparent is not None:
            headers["traceparent"] = ctx.traceparent
        timeout = aiohttp.ClientTimeout(total=payload.get("timeout_seconds", DEFAULT_HTTP_TIMEOUT))
        target = urlsplit(payload["url"])
        port = target.port or (443 if target.scheme == "https" else 80)
        refusal = await self.policy.refusal_resolved(target.hostname or "", port)
        if refusal:
            raise PermanentFailure(refusal)
        # Network errors and timeouts propagate as ordinary errors: they are retried.
        async with self._client().request(
            payload.get("method", "POST").upper(),
            payload["url"],
            headers=headers,
            json=body if isinstance(body, dict | list) else None,
            data=body if isinstance(body, str) else None,
            timeout=timeout,
            allow_redirects=False,
        ) as response:
            status = response.status
        if 200 <= status < 300:
            return
        message = f"HTTP {status} from {payload['url']}"
        if status >= 500 or status in RETRYABLE_STATUS:
            raise RuntimeError(message)
        raise PermanentFailure(message)

    async def aclose(self) -> None:
        if self._session is not None:
            await self._session.close()


def builtin_app(caller: HttpCaller) -> App:
    app = App(dict(builtins.types))
    app.task("http", check_payload=lambda p: check_http_payload(p, caller.policy))(caller)
    return app
