"""`tickwheel token create|list|revoke`: API tokens, stored only as hashes.

These talk to the store, not to a server (the API has no route that makes a token), so
they take the database URL. The store and the API's hashing are imported when a command
runs, not with the CLI.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING, Annotated, Any, TypeVar
from urllib.parse import urlsplit

import typer

from tickwheel.cli.main import new_typer
from tickwheel.cli.output import OUTPUT, emit, field
from tickwheel.cli.remote import fail
from tickwheel.config import Settings, env
from tickwheel.errors import MissingExtra

if TYPE_CHECKING:
    from tickwheel.storage.base import Store

T = TypeVar("T")
SCOPES = ("submit", "read", "admin", "worker")  # tickwheel.api.auth.Scope, checked by a test
tokens = new_typer(help="API tokens: once one exists, every route needs one.")
DATABASE = Annotated[str, typer.Option(envvar=env("database_url"), help="Where tasks are stored.")]
TOKEN_COLUMNS = (
    field("token_id"),
    field("name", text=True),
    field("scopes"),
    field("revoked", optional=True),
)


def register(cli: typer.Typer) -> None:
    cli.add_typer(tokens, name="token")


def _with_store(url: str, work: Callable[[Store], Awaitable[T]]) -> T:
    """`work`'s result on the store at `url`, opened for it and closed after."""
    from tickwheel.storage.factory import open_store

    async def run() -> T:
        try:
            store = await open_store(url, partitions=Settings().partitions, name="tickwheel-token")
        except MissingExtra:
            raise
        except Exception as error:  # no such file, no server, a bad URL: one line
            fail(f"cannot open the store at {_shown(url)}: {error}", 2)
        try:
            return await work(store)
        finally:
            await store.close()

    return asyncio.run(run())


def _shown(url: str) -> str:
    """The URL without its password."""
    parts = urlsplit(url)
    if parts.password is None:
        return url
    return parts._replace(netloc=parts.netloc.replace(f":{parts.password}@", ":***@")).geturl()


def _now_ms() -> int:
    return time.time_ns() // 1_000_000


@tokens.command("create")
def create(
    scopes: Annotated[
        str, typer.Option(help="Comma-separated: submit, read, admin, worker.")
    ] = "submit,read",
    name: Annotated[str, typer.Option(help="What the token is for.")] = "",
    database_url: DATABASE = Settings().database_url,
    output: OUTPUT = None,
) -> None:
    """Create a token and print it with its id, name and scopes. The token is shown
    this once: only its hash is kept."""
    from tickwheel.api.auth import new_token, token_hash
    from tickwheel.ids import new_id

    chosen = sorted({s.strip() for s in scopes.split(",") if s.strip()})
    if not chosen or set(chosen) - set(SCOPES):
        fail(f"--scopes: choose from {', '.join(SCOPES)}", 2)
    secret, token_id = new_token(), new_id()
    _with_store(
        database_url,
        lambda store: store.create_token(
            token_id, token_hash(secret), name=name, scopes=frozenset(chosen), now_ms=_now_ms()
        ),
    )
    shown = {"token_id": token_id, "name": name, "scopes": ",".join(chosen), "token": secret}
    emit(shown, output)


@tokens.command("list")
def list_tokens(database_url: DATABASE = Settings().database_url, output: OUTPUT = None) -> None:
    """List tokens (never the tokens themselves)."""
    found = _with_store(database_url, lambda store: store.list_tokens())
    rows: list[dict[str, Any]] = [
        {
            "token_id": t.token_id,
            "name": t.name,
            "scopes": ",".join(sorted(t.scopes)),
            "revoked": bool(t.revoked_ms),
        }
        for t in found
    ]
    emit(rows, output, rows=lambda r: r, columns=TOKEN_COLUMNS)


@tokens.command("revoke")
def revoke(
    token_id: Annotated[str, typer.Argument(metavar="TOKEN_ID", help="From token list.")],
    database_url: DATABASE = Settings().database_url,
) -> None:
    """Revoke a token by its id (from `token list`)."""
    if not _with_store(database_url, lambda store: store.revoke_token(token_id, _now_ms())):
        fail(f"no active token has the id {token_id}")
    typer.echo(f"revoked {token_id}")
