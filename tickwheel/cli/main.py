"""The `tickwheel` command."""

from __future__ import annotations

import typer

from tickwheel.cli import bench, cluster, tasks, up
from tickwheel.cli.tokens import tokens
from tickwheel.cli.workflows import workflows
from tickwheel.errors import MissingExtra

cli = typer.Typer(
    name="tickwheel",
    help="Tickwheel: a job scheduler on a hierarchical timing wheel.",
    no_args_is_help=True,
    add_completion=False,
)
cli.command("up")(up.up)
tasks.register(cli)
cluster.register(cli)
cli.add_typer(tokens, name="token")
cli.add_typer(workflows, name="workflow")
bench.register(cli)


def main() -> None:
    try:
        cli()
    except MissingExtra as error:  # one line naming the extra, not a traceback
        typer.echo(str(error), err=True)
        raise SystemExit(2) from None
