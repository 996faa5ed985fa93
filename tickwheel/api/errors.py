"""Maps errors to HTTP answers: 4xx JSON naming the field at fault, never a bare 500.

A store that fails answers `503` with `Retry-After` and an `error` naming the cause
(`store_unavailable`, `storage_full`, `outcome_unknown`). Such answers go through
Starlette's exception middleware, like a 4xx: the connection stays open and nothing is
logged per request (the store's `StoreHealth` tallies its failures). Only an error no
handler knows reaches the catch-all, whose answer uvicorn follows by closing the
connection and logging the traceback.
"""

from __future__ import annotations

import asyncio
import json
import logging

from fastapi import FastAPI, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse
from starlette.exceptions import HTTPException as StarletteHTTPException
from starlette.routing import Match
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from tickwheel.errors import (
    Conflict,
    IdempotencyConflict,
    InvalidBatch,
    InvalidRequest,
    OutcomeUnknown,
    Overloaded,
    StaleFence,
    StoreUnavailable,
    TaskNotFound,
    TickwheelError,
)

log = logging.getLogger(__name__)


def error_body(error: str, message: str, field: str | None = None) -> dict[str, str | None]:
    return {"error": error, "message": message, "field": field}


def _field_of(loc: tuple[int | str, ...]) -> str:
    parts = [str(p) for p in loc if p not in ("body", "query", "path")]
    return ".".join(parts) or "body"


async def _validation(request: Request, exc: RequestValidationError) -> JSONResponse:
    problems = exc.errors()
    first = problems[0] if problems else {"loc": ("body",), "msg": "invalid"}
    field = _field_of(tuple(first.get("loc", ())))
    message = str(first.get("msg", "invalid")).removeprefix("Value error, ")
    body = error_body("invalid_request", f"{field}: {message}", field)
    body["problems"] = [  # type: ignore[assignment]
        {"field": _field_of(tuple(p.get("loc", ()))), "message": p.get("msg")} for p in problems
    ]
    return JSONResponse(body, status_code=422)


async def _invalid(request: Request, exc: Exception) -> JSONResponse:
    assert isinstance(exc, InvalidRequest)
    status = 413 if exc.field == "payload" and "limit" in exc.reason else 422
    return JSONResponse(error_body("invalid_request", str(exc), exc.field), status_code=status)


async def _invalid_batch(request: Request, exc: Exception) -> JSONResponse:
    assert isinstance(exc, InvalidBatch)
    body = error_body("invalid_request", str(exc), exc.field)
    body["problems"] = [  # type: ignore[assignment]
        {"field": f"tasks.{index}.{problem.field}", "message": problem.reason}
        for index, problem in exc.problems
    ]
    return JSONResponse(body, status_code=422)


async def _not_found(request: Request, exc: Exception) -> JSONResponse:
    return JSONResponse(error_body("not_found", str(exc)), status_code=404)


async def _conflict(request: Request, exc: Exception) -> JSONResponse:
    body = error_body("conflict", str(exc))
    if isinstance(exc, IdempotencyConflict):
        body.update(error="idempotency_conflict", task_id=exc.task_id)
    elif isinstance(exc, StaleFence):
        body["error"] = "stale_fence"
    return JSONResponse(body, status_code=409)


async def _http_error(request: Request, exc: Exception) -> JSONResponse:
    """Framework errors (unknown route, wrong method, unreadable body) in our shape."""
    assert isinstance(exc, StarletteHTTPException)
    kinds = {400: "invalid_request", 404: "unknown_route", 405: "method_not_allowed"}
    body = error_body(kinds.get(exc.status_code, "http_error"), str(exc.detail))
    if exc.status_code == 400:
        body["field"] = "body"
    headers = dict(exc.headers or {})
    if exc.status_code == 405:
        headers["Allow"] = ", ".join(sorted(_allowed_methods(request)))
    return JSONResponse(body, status_code=exc.status_code, headers=headers)


def _allowed_methods(request: Request) -> set[str]:
    """Every method of every route on this path (Starlette names only the first route's)."""
    allowed: set[str] = set()
    for route in request.app.router.routes:
        for method in getattr(route, "methods", None) or ():
            match, _ = route.matches({**request.scope, "method": method})
            if match is Match.FULL:
                allowed.add(method)
    return allowed


async def _overloaded(request: Request, exc: Exception) -> JSONResponse:
    assert isinstance(exc, Overloaded)
    headers = {"Retry-After": str(exc.retry_after_seconds)}
    return JSONResponse(error_body("overloaded", str(exc)), status_code=429, headers=headers)


async def _store_failed(request: Request, exc: Exception) -> JSONResponse:
    assert isinstance(exc, StoreUnavailable)
    headers = {"Retry-After": str(exc.retry_after_seconds)}
    return JSONResponse(error_body(exc.code, str(exc)), status_code=503, headers=headers)


async def _unexpected(request: Request, exc: Exception) -> JSONResponse:
    log.exception("unexpected error on %s %s", request.method, request.url.path)
    status = 503 if isinstance(exc, TickwheelError | OSError) else 500
    return JSONResponse(error_body("internal", "the server could not do this"), status_code=status)


def install(app: FastAPI) -> None:
    app.add_exception_handler(RequestValidationError, _validation)  # type: ignore[arg-type]
    app.add_exception_handler(InvalidBatch, _invalid_batch)
    app.add_exception_handler(InvalidRequest, _invalid)
    app.add_exception_handler(TaskNotFound, _not_found)
    app.add_exception_handler(Conflict, _conflict)
    app.add_exception_handler(StaleFence, _conflict)
    app.add_exception_handler(Overloaded, _overloaded)
    app.add_exception_handler(StoreUnavailable, _store_failed)
    app.add_exception_handler(StarletteHTTPException, _http_error)
    app.add_exception_handler(Exception, _unexpected)


class AnswerWhenCancelled:
    """A request cancelled before its answer began (the server's shutdown grace ran
    out) is answered `503 outcome_unknown`: what it was doing may or may not have been
    done. Without this, uvicorn answers a bare `500`."""

    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        started = False

        async def sending(message: Message) -> None:
            nonlocal started
            started = started or message["type"] == "http.response.start"
            await send(message)

        try:
            await self.app(scope, receive, sending)
        except asyncio.CancelledError:
            task = asyncio.current_task()
            if started or task is None:
                raise
            task.uncancel()  # answered: the request ends here
            error = OutcomeUnknown("the server is stopping: this may or may not have been done")
            body = json.dumps(error_body(error.code, str(error))).encode()
            headers = [
                (b"content-type", b"application/json"),
                (b"content-length", str(len(body)).encode()),
                (b"retry-after", str(error.retry_after_seconds).encode()),
            ]
            await send({"type": "http.response.start", "status": 503, "headers": headers})
            await send({"type": "http.response.body", "body": body})
