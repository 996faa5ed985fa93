"""`tickwheel bench`: the benchmarks of a source checkout, run through this command.

The benchmarks and the peers' harnesses live in the checkout's top-level `bench/`
folder, not in the package, so an install never carries them. From a development
install (`pip install -e '.[bench]'`) the package sits in the checkout, and this command
hands its arguments to `bench.cli`; from any other install it says where they run.
"""

from __future__ import annotations

import importlib
import os
import sys
from pathlib import Path

import typer
from typer.main import get_command

import tickwheel

HELP = "Benchmarks (from a source checkout): each prints its figures, the last line as JSON."
NOT_HERE = (
    "tickwheel bench runs from a source checkout: clone Tickwheel, run"
    " `pip install -e '.[bench]'` in it, and run `tickwheel bench` from that install"
)


def checkout() -> Path | None:
    """The source checkout this package was installed from in development mode: the
    folder holding both `tickwheel/` and `bench/`; None for an installed package."""
    root = Path(tickwheel.__file__).resolve().parent.parent
    if (root / "bench" / "cli.py").is_file() and (root / "pyproject.toml").is_file():
        return root
    return None


def bench(ctx: typer.Context) -> None:
    root = checkout()
    if root is None:
        typer.echo(NOT_HERE, err=True)
        raise typer.Exit(2)
    if str(root) not in sys.path:
        sys.path.insert(0, str(root))
    os.environ["PYTHONPATH"] = importlib.import_module("bench").pythonpath()  # its children
    try:
        commands = importlib.import_module("bench.cli").bench
    except ModuleNotFoundError as error:  # a development install without the extra
        typer.echo(f"tickwheel bench needs {error.name}: pip install -e '.[bench]'", err=True)
        raise typer.Exit(2) from None
    get_command(commands).main(args=ctx.args, prog_name="tickwheel bench")


def register(cli: typer.Typer) -> None:
    """`tickwheel bench ...`: every argument, --help included, goes to `bench.cli`."""
    cli.command(
        "bench",
        help=HELP,
        add_help_option=False,
        context_settings={"allow_extra_args": True, "ignore_unknown_options": True},
    )(bench)
