"""Caps the size of request bodies before anything parses them."""

from __future__ import annotations

import json

from starlette.types import ASGIApp, Message, Receive, Scope, Send


class BodyTooLarge(Exception):
    pass


class BodyLimit:
    """Answers 413 naming `payload` once a body passes `max_bytes`, counted as it streams,
    so neither a lying Content-Length nor a chunked body gets past."""

    def __init__(
        self, app: ASGIApp, *, max_bytes: int, per_path: dict[str, int] | None = None
    ) -> None:
        self.app = app
        self.max_bytes = max_bytes
        self.per_path = per_path or {}

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        limit = self.per_path.get(scope.get("path", ""), self.max_bytes)
        declared = dict(scope.get("headers", [])).get(b"content-length")
        if declared is not None and declared.isdigit() and int(declared) > limit:
            await self._reject(send, limit)
            return
        seen = 0
        too_large = started = False

        async def counted() -> Message:
            nonlocal seen, too_large
            message = await receive()
            seen += len(message.get("body", b""))
            if seen > limit:
                too_large = True
                raise BodyTooLarge
            return message

        async def tracked(message: Message) -> None:
            # The app may turn our exception into its own 400; the answer is our 413.
            nonlocal started
            if too_large:
                if not started and message["type"] == "http.response.start":
                    started = True
                    await self._reject(send, limit)
                return
            started = started or message["type"] == "http.response.start"
            await send(message)

        try:
            await self.app(scope, counted, tracked)
        except BodyTooLarge:
            if not started:
                await self._reject(send, limit)

    async def _reject(self, send: Send, limit: int) -> None:
        body = json.dumps(
            {
                "error": "invalid_request",
                "message": f"payload: the request body is larger than {limit} bytes",
                "field": "payload",
            }
        ).encode()
        headers = [
            (b"content-type", b"application/json"),
            (b"content-length", str(len(body)).encode()),
        ]
        await send({"type": "http.response.start", "status": 413, "headers": headers})
        await send({"type": "http.response.body", "body": body})
