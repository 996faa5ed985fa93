"""The CLI reads its plain parameters itself, as Typer would, without pydantic."""

from __future__ import annotations

import subprocess
import sys

import pytest
from typer.testing import CliRunner

from tickwheel.cli.main import cli


def run(*words: str) -> tuple[int, str]:
    done = subprocess.run(
        [sys.executable, "-m", "tickwheel.cli.main", *words],
        capture_output=True,
        text=True,
        timeout=30,
    )
    return done.returncode, done.stdout + done.stderr


@pytest.mark.parametrize(
    ("words", "says"),
    [
        (["ls", "--limit", "0"], "0 is not in the range 1<=x<=500"),
        (["ls", "--limit", "many"], "'many' is not a valid integer"),
        (["ls", "-o", "xml"], "'xml' is not a valid choice (json, table)"),
        (["priority", "t", "101"], "101 is not in the range -100<=x<=100"),
        (["submit", "noop", "--delay", "-1"], "-1.0 is not in the range 0<=x"),
        (["submit", "noop", "--delay", "soon"], "'soon' is not a valid float"),
    ],
)
def test_bad_values_are_usage_errors(words: list[str], says: str) -> None:
    code, said = run(*words, "--url", "http://127.0.0.1:9")
    assert code == 2
    assert says in said
    assert "Traceback" not in said


def test_the_same_values_are_read_by_typer_and_here() -> None:
    """What Typer's own coercion reads the same way (the help is Typer's)."""
    shown = CliRunner().invoke(cli, ["ls", "--limit", "0", "--url", "http://127.0.0.1:9"])
    assert shown.exit_code == 2


def test_module_runs_as_main() -> None:
    code, said = run("--version")
    assert code == 0 and said.startswith("tickwheel ")
