"""The `tickwheel` command.

Each subcommand's module is imported only when that subcommand runs (or when the help
lists them all), so `tickwheel ls` loads the client, not the server, FastAPI, uvicorn
or the stores' drivers. Help is Click's plain layout: it wraps and never cuts a flag
or variable name, whatever the terminal's width.
"""

from __future__ import annotations

import importlib
import sys
from typing import Annotated, Any

import typer
from typer.core import TyperGroup
from typer.main import get_command, get_group

from tickwheel.cli.coercion import plain
from tickwheel.errors import MissingExtra

# Command name: the module whose `register(cli)` declares it, in the order help lists them.
COMMANDS = {
    "up": "tickwheel.cli.up",
    "submit": "tickwheel.cli.tasks",
    "batch": "tickwheel.cli.tasks",
    "status": "tickwheel.cli.tasks",
    "ls": "tickwheel.cli.tasks",
    "history": "tickwheel.cli.tasks",
    "wait": "tickwheel.cli.tasks",
    "cancel": "tickwheel.cli.tasks",
    "redrive": "tickwheel.cli.operations",
    "priority": "tickwheel.cli.operations",
    "pause": "tickwheel.cli.operations",
    "resume": "tickwheel.cli.operations",
    "schedules": "tickwheel.cli.operations",
    "fire-times": "tickwheel.cli.operations",
    "queues": "tickwheel.cli.operations",
    "nodes": "tickwheel.cli.operations",
    "health": "tickwheel.cli.operations",
    "stats": "tickwheel.cli.operations",
    "metrics": "tickwheel.cli.operations",
    "workflow": "tickwheel.cli.workflows",
    "limits": "tickwheel.cli.limits",
    "token": "tickwheel.cli.tokens",
    "api": "tickwheel.cli.cluster",
    "scheduler": "tickwheel.cli.cluster",
    "worker": "tickwheel.cli.cluster",
    "migrate": "tickwheel.cli.cluster",
    "local-cluster": "tickwheel.cli.cluster",
    "bench": "tickwheel.cli.bench",
}
HELP_NAMES = ["-h", "--help"]
SETTINGS: dict[str, Any] = {"help_option_names": HELP_NAMES, "max_content_width": 100}


def new_typer(**options: Any) -> typer.Typer:
    """A Typer set up as every part of this CLI is: plain help, no completion scripts,
    and Python's own traceback for a bug (never Rich's page-long one)."""
    return typer.Typer(
        rich_markup_mode=None,
        add_completion=False,
        pretty_exceptions_enable=False,
        context_settings=SETTINGS,
        **options,
    )


class LazyGroup(TyperGroup):
    """Finds a subcommand by importing only the module that declares it."""

    def list_commands(self, ctx: Any) -> list[str]:
        return list(COMMANDS)

    def get_command(self, ctx: Any, cmd_name: str) -> Any:
        module = COMMANDS.get(cmd_name)
        if module is None:
            return None
        part = new_typer()
        importlib.import_module(module).register(part)
        return plain(get_group(part).get_command(ctx, cmd_name), HELP_NAMES)


def _version(shown: bool) -> None:
    if shown:
        from importlib.metadata import version

        typer.echo(f"tickwheel {version('tickwheel')}")
        raise typer.Exit()


cli = new_typer(
    name="tickwheel",
    cls=LazyGroup,
    help="Tickwheel: a job scheduler on a hierarchical timing wheel.",
    no_args_is_help=True,
)


@cli.callback()
def _root(
    version: Annotated[
        bool,
        typer.Option("--version", callback=_version, is_eager=True, help="Print the version."),
    ] = False,
) -> None:
    """Tickwheel: a job scheduler on a hierarchical timing wheel."""


def main() -> None:
    try:
        plain(get_command(cli), HELP_NAMES)(prog_name="tickwheel")
    except MissingExtra as error:  # one line naming the extra, not a traceback
        typer.echo(str(error), err=True)
        sys.exit(2)


if __name__ == "__main__":  # python -m tickwheel.cli.main, as in `python -X importtime`
    main()
