"""Every command's help at 80 columns names every flag and variable whole, and the
commands that talk to a server load none of it."""

from __future__ import annotations

import json
import subprocess
import sys
from collections.abc import Iterator

import pytest
from typer.main import get_command
from typer.testing import CliRunner

from tickwheel.api.auth import Scope
from tickwheel.cli import main, tokens
from tickwheel.cli.main import COMMANDS, cli

SERVER_SIDE = ("fastapi", "starlette", "pydantic", "uvicorn", "asyncpg", "redis", "aiohttp")
SERVER_PARTS = ("tickwheel.api", "tickwheel.engine", "tickwheel.storage", "tickwheel.queue")


def commands() -> Iterator[tuple[list[str], object]]:
    """Each command as its words and its Click command, subcommands of groups included."""
    root = get_command(cli)
    ctx = root.make_context("tickwheel", ["--help"], resilient_parsing=True)
    for name in COMMANDS:
        command = root.get_command(ctx, name)  # type: ignore[attr-defined]
        subcommands = getattr(command, "commands", {})
        if subcommands:
            for sub, found in subcommands.items():
                yield [name, sub], found
        else:
            yield [name], command


@pytest.mark.parametrize(
    ("words", "command"),
    [c for c in commands() if c[0] != ["bench"]],  # bench hands --help to bench/cli.py
    ids=lambda v: " ".join(v) if isinstance(v, list) else "",
)
def test_help_at_80_columns_cuts_no_flag_or_variable(words: list[str], command: object) -> None:
    shown = CliRunner().invoke(cli, [*words, "--help"], env={"COLUMNS": "80"})
    assert shown.exit_code == 0, shown.output
    assert "…" not in shown.output
    assert all(len(line) <= 80 for line in shown.output.splitlines())
    for param in command.params:  # type: ignore[attr-defined]
        if param.param_type_name != "option":
            continue  # an argument, shown by its metavar
        for name in [*param.opts, *param.secondary_opts]:
            assert name in shown.output
        if isinstance(param.envvar, str) and param.show_envvar:
            assert param.envvar in shown.output


def test_version() -> None:
    shown = CliRunner().invoke(cli, ["--version"])
    assert shown.exit_code == 0
    assert shown.output.startswith("tickwheel 0.")


def test_the_token_scopes_are_the_apis() -> None:
    assert tuple(str(s) for s in Scope) == tokens.SCOPES


def loaded_by(*words: str) -> list[str]:
    """The server's modules loaded by `tickwheel WORDS --help`, which finds the command."""
    probe = (
        "import sys, json\n"
        f"sys.argv = ['tickwheel', *{list(words)!r}, '--help']\n"
        "from tickwheel.cli.main import main\n"
        "try:\n    main()\nexcept SystemExit:\n    pass\n"
        "print(json.dumps(sorted(m for m in sys.modules if m.split('.')[0] in "
        f"{SERVER_SIDE!r} or m.startswith({SERVER_PARTS!r}))))"
    )
    run = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, check=True)
    return list(json.loads(run.stdout.splitlines()[-1]))


@pytest.mark.parametrize(
    "words", [["ls"], ["submit"], ["wait"], ["nodes"], ["workflow", "ls"], ["token", "list"]]
)
def test_commands_load_no_server_module(words: list[str]) -> None:
    assert loaded_by(*words) == []


def test_the_root_lists_every_command() -> None:
    shown = CliRunner().invoke(cli, ["--help"], env={"COLUMNS": "80"})
    for name in COMMANDS:
        assert f"  {name} " in shown.output
    assert main.SETTINGS["help_option_names"] == ["-h", "--help"]
