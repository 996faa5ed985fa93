"""What every command that talks to a server shares: where it is, the token, and one
line (never a traceback) when the call fails.

Exit status: 0 done, 1 the server refused or failed the call, 2 a usage error or no
server at the URL.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Annotated, Any, NoReturn

import msgspec
import typer

from tickwheel.client import Client
from tickwheel.client.base import DEFAULT_URL
from tickwheel.config import env
from tickwheel.errors import TickwheelError, Unreachable

URL = Annotated[str, typer.Option("--url", envvar=env("url"), help="The Tickwheel server.")]
TOKEN = Annotated[
    str | None,
    typer.Option(
        "--token", envvar=env("token"), show_envvar=True, help="An API token, once tokens exist."
    ),
]
TASK_ID = Annotated[str, typer.Argument(metavar="TASK_ID", help="A task's id (from submit or ls).")]
SCHEDULE_ID = Annotated[
    str, typer.Argument(metavar="SCHEDULE_ID", help="A recurring task's id (its schedule_id).")
]
WORKFLOW_ID = Annotated[
    str, typer.Argument(metavar="WORKFLOW_ID", help="A workflow's id (from workflow submit or ls).")
]
__all__ = [
    "DEFAULT_URL",
    "SCHEDULE_ID",
    "TASK_ID",
    "TOKEN",
    "URL",
    "WORKFLOW_ID",
    "call",
    "exclusive",
    "fail",
    "needs",
]


def fail(message: str, code: int = 1) -> NoReturn:
    """Print one line on stderr and exit with `code`."""
    typer.echo(f"tickwheel: {message}", err=True)
    raise typer.Exit(code)


def call(url: str, token: str | None, work: Callable[[Client], Any]) -> Any:
    """`work`'s answer from a client of `url`, as JSON-ready data (times as ISO 8601)."""
    try:
        client = Client(url, token=token)
    except ValueError as error:  # a malformed URL or token
        fail(str(error), 2)
    try:
        with client:
            return msgspec.to_builtins(work(client))
    except Unreachable as error:
        fail(f"cannot reach {client.url}: {error}", 2)
    except TimeoutError as error:  # `wait`
        fail(str(error))
    except TickwheelError as error:
        fail(f"{type(error).__name__}: {error}")


def exclusive(**flags: object) -> None:
    """Refuse (exit 2) when more than one of these flags was given (not None)."""
    given = [f"--{name.replace('_', '-')}" for name, value in flags.items() if value is not None]
    if len(given) > 1:
        fail(f"{' and '.join(given)} cannot be used together: choose one", 2)


def needs(flag: str, value: object, other: str, present: object) -> None:
    """Refuse (exit 2) `flag` given without `other`, which it only modifies."""
    if value is not None and present is None:
        fail(f"{flag} applies only with {other}", 2)
