"""API tokens with scopes.

Tokens are random and long, so a SHA-256 of each is all the store keeps. While no token
exists the API is open (and `tickwheel up` binds only to loopback unless told
`--insecure`); as soon as one exists, every route needs a token with its scope: none is
401, a token without the scope is 403. `/healthz`, `/readyz` and `/openapi.json` stay open.
"""

from __future__ import annotations

import hashlib
import secrets
import time
from collections.abc import Awaitable, Callable
from enum import StrEnum

from fastapi import Depends, Request, params
from fastapi.responses import JSONResponse

from tickwheel.errors import Forbidden, Unauthorized
from tickwheel.storage.base import TokenStore

TOKEN_PREFIX = "tw_"
CACHE_SECONDS = 1.0


class Scope(StrEnum):
    SUBMIT = "submit"
    READ = "read"
    ADMIN = "admin"  # cancel, re-drive, priority, pause and resume
    WORKER = "worker"  # the worker protocol


def new_token() -> str:
    return TOKEN_PREFIX + secrets.token_urlsafe(32)


def token_hash(token: str) -> str:
    return hashlib.sha256(token.encode()).hexdigest()


class Tokens:
    """The active tokens, read from the store at most once a second."""

    def __init__(self, store: Callable[[], TokenStore]) -> None:
        self._store = store  # the node opens its store when it starts
        self._scopes: dict[str, frozenset[str]] = {}
        self._open = True
        self._read_at = float("-inf")

    async def scopes_of(self, authorization: str | None) -> frozenset[str] | None:
        """None while no token was ever made (the API is open); else the token's scopes.
        Revoking every token does not open the API again."""
        if time.monotonic() - self._read_at > CACHE_SECONDS:
            store = self._store()
            self._scopes = await store.active_tokens()
            self._open = not self._scopes and not await store.list_tokens()
            self._read_at = time.monotonic()
        if self._open:
            return None
        scheme, _, token = (authorization or "").partition(" ")
        if scheme.lower() != "bearer" or not token:
            raise Unauthorized("an API token is required: Authorization: Bearer <token>")
        scopes = self._scopes.get(token_hash(token.strip()))
        if scopes is None:
            raise Unauthorized("this API token is not valid")
        return scopes


def require(scope: Scope) -> Callable[[Request], Awaitable[None]]:
    async def check(request: Request) -> None:
        tokens: Tokens = request.app.state.tokens
        scopes = await tokens.scopes_of(request.headers.get("authorization"))
        if scopes is not None and scope not in scopes:
            raise Forbidden(f"this API token lacks the {scope.value!r} scope")

    return check


def needs(scope: Scope) -> list[params.Depends]:
    """Route dependencies for `scope`."""
    return [Depends(require(scope))]


async def auth_error(request: Request, exc: Exception) -> JSONResponse:
    if isinstance(exc, Unauthorized):
        status, kind, headers = 401, "unauthorized", {"WWW-Authenticate": "Bearer"}
    else:
        status, kind, headers = 403, "forbidden", None
    body = {"error": kind, "message": str(exc), "field": "Authorization"}
    return JSONResponse(body, status_code=status, headers=headers)
