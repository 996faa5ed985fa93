"""`tickwheel limits`: cluster-wide rate and concurrency limits per task type, queue or
limit key (README, Rate and concurrency limits)."""

from __future__ import annotations

from typing import Annotated

import typer

from tickwheel.cli.main import new_typer
from tickwheel.cli.output import OUTPUT, emit, field
from tickwheel.cli.remote import DEFAULT_URL, TOKEN, URL, call, fail
from tickwheel.core.limits import Scope

limits = new_typer(
    help="Rate and concurrency limits: what they allow, and what they hold back now.",
    invoke_without_command=True,
)
LIMIT_COLUMNS = (
    field("scope"),
    field("name", text=True),
    field("rate", optional=True),
    field("concurrency", optional=True),
    field("started_in_window", "started", optional=True),
    field("running"),
    field("held"),
)


SCOPE = Annotated[Scope, typer.Argument(help="task_type, queue or key.")]
NAME = Annotated[str, typer.Argument(help="The task type, queue or limit key.")]


def register(cli: typer.Typer) -> None:
    cli.add_typer(limits, name="limits")


@limits.callback()
def list_limits(
    ctx: typer.Context, url: URL = DEFAULT_URL, token: TOKEN = None, output: OUTPUT = None
) -> None:
    """List every limit with its use: starts in its window, running, held back."""
    if ctx.invoked_subcommand is None:
        emit(call(url, token, lambda c: c.limits()), output, rows=list, columns=LIMIT_COLUMNS)


@limits.command("set")
def set_limit(
    scope: SCOPE,
    name: NAME,
    rate: Annotated[
        str | None, typer.Option(help="At most COUNT/PERIOD starts: 100/s, 10/m, 20/10s.")
    ] = None,
    concurrency: Annotated[
        int | None, typer.Option(min=1, help="At most this many running at once.")
    ] = None,
    url: URL = DEFAULT_URL,
    token: TOKEN = None,
    output: OUTPUT = None,
) -> None:
    """Set (or replace) the limit of a task type, queue or limit key."""
    if rate is None and concurrency is None:
        fail("give --rate, --concurrency or both", 2)
    found = call(url, token, lambda c: c.set_limit(scope, name, rate=rate, concurrency=concurrency))
    emit(found, output)


@limits.command("delete")
def delete_limit(scope: SCOPE, name: NAME, url: URL = DEFAULT_URL, token: TOKEN = None) -> None:
    """Remove a limit: the tasks it held back go at once."""
    call(url, token, lambda c: c.delete_limit(scope, name))
    typer.echo(f"removed the limit on {scope} {name}")
