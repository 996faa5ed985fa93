"""`tickwheel token create|list|revoke`: API tokens, stored only as hashes."""

from __future__ import annotations

import asyncio
import time
from typing import Annotated

import typer
from rich.console import Console
from rich.table import Table

from tickwheel.api.auth import Scope, new_token, token_hash
from tickwheel.config import Settings, env
from tickwheel.ids import new_id
from tickwheel.storage.base import Store
from tickwheel.storage.factory import open_store

tokens = typer.Typer(help="API tokens: once one exists, every route needs one.")
console = Console()
DATABASE = Annotated[str, typer.Option(envvar=env("database_url"), help="Where tasks are stored.")]


async def _with_store(url: str) -> Store:
    return await open_store(url, partitions=Settings().partitions, name="tickwheel-token")


@tokens.command("create")
def create(
    scopes: Annotated[
        str, typer.Option(help="Comma-separated: submit, read, admin, worker.")
    ] = "submit,read",
    name: Annotated[str, typer.Option(help="What the token is for.")] = "",
    database_url: DATABASE = Settings().database_url,
) -> None:
    """Create a token and print it. It is shown this once: only its hash is kept."""
    chosen = {s.strip() for s in scopes.split(",") if s.strip()}
    unknown = chosen - {str(s) for s in Scope}
    if not chosen or unknown:
        names = ", ".join(str(s) for s in Scope)
        raise typer.BadParameter(f"choose from {names}", param_hint="--scopes")
    token = new_token()

    async def save() -> None:
        store = await _with_store(database_url)
        try:
            await store.create_token(
                new_id(),
                token_hash(token),
                name=name,
                scopes=frozenset(chosen),
                now_ms=time.time_ns() // 1_000_000,
            )
        finally:
            await store.close()

    asyncio.run(save())
    typer.echo(token)


@tokens.command("list")
def list_tokens(database_url: DATABASE = Settings().database_url) -> None:
    """List tokens (never the tokens themselves)."""

    async def read() -> None:
        store = await _with_store(database_url)
        try:
            table = Table("token_id", "name", "scopes", "revoked")
            for t in await store.list_tokens():
                table.add_row(
                    t.token_id, t.name, ",".join(sorted(t.scopes)), "yes" if t.revoked_ms else ""
                )
            console.print(table)
        finally:
            await store.close()

    asyncio.run(read())


@tokens.command("revoke")
def revoke(token_id: str, database_url: DATABASE = Settings().database_url) -> None:
    """Revoke a token by its id (from `token list`)."""

    async def write() -> bool:
        store = await _with_store(database_url)
        try:
            return await store.revoke_token(token_id, time.time_ns() // 1_000_000)
        finally:
            await store.close()

    if not asyncio.run(write()):
        console.print(f"[red]no active token has the id {token_id}[/red]")
        raise typer.Exit(1)
