"""`submit`, `status`, `ls` and `cancel`: talk to a running Tickwheel over HTTP."""

from __future__ import annotations

import json
from collections.abc import Callable
from datetime import datetime
from typing import Annotated, Any

import typer
from rich.console import Console
from rich.table import Table

from tickwheel.client import Client
from tickwheel.client.base import DEFAULT_URL
from tickwheel.config import env
from tickwheel.errors import TickwheelError, Unreachable
from tickwheel.models import SubmitOptions
from tickwheel.wire.answers import Answer

URL = Annotated[str, typer.Option("--url", envvar=env("url"), help="The Tickwheel server.")]
console = Console()


def register(cli: typer.Typer) -> None:
    cli.command()(submit)
    cli.command()(status)
    cli.command("ls")(list_tasks)
    cli.command()(cancel)


def call(url: str, work: Callable[[Client], Answer]) -> Any:
    """Run `work` with a client of `url`; print what went wrong and exit non-zero."""
    try:
        with Client(url) as client:
            return work(client).model_dump(mode="json")
    except Unreachable as error:
        console.print(f"[red]cannot reach {url}: {error}[/red]")
        raise typer.Exit(2) from None
    except TickwheelError as error:
        console.print(f"[red]{type(error).__name__}: {error}[/red]")
        raise typer.Exit(1) from None


def submit(
    task_type: Annotated[str, typer.Argument(help="The task type, e.g. http or noop.")],
    payload: Annotated[str, typer.Option(help="The payload as JSON.")] = "null",
    delay: Annotated[float | None, typer.Option(help="Run after this many seconds.")] = None,
    at: Annotated[str | None, typer.Option(help="Run at this ISO 8601 time with offset.")] = None,
    cron: Annotated[str | None, typer.Option(help="A 5-field cron expression or @macro.")] = None,
    timezone: Annotated[str, typer.Option(help="IANA time zone of --cron.")] = "UTC",
    max_retries: Annotated[
        int | None, typer.Option(help="Retries after the first attempt.")
    ] = None,
    queue: Annotated[str | None, typer.Option()] = None,
    priority: Annotated[int | None, typer.Option()] = None,
    idempotency_key: Annotated[
        str | None, typer.Option(help="A repeat with this key returns the first task.")
    ] = None,
    url: URL = DEFAULT_URL,
) -> None:
    """Submit a task and print its id."""
    try:
        data = json.loads(payload)
    except json.JSONDecodeError as error:
        raise typer.BadParameter(f"not JSON: {error}", param_hint="--payload") from None
    options: SubmitOptions = {}
    if cron is not None:
        options.update({"cron": cron, "timezone": timezone})
    elif at is not None:
        try:
            options["due_time"] = datetime.fromisoformat(at)
        except ValueError as error:
            raise typer.BadParameter(str(error), param_hint="--at") from None
    elif delay is not None:
        options["delay_seconds"] = delay
    if max_retries is not None:
        options["max_retries"] = max_retries
    if queue is not None:
        options["queue"] = queue
    if priority is not None:
        options["priority"] = priority
    if idempotency_key is not None:
        options["idempotency_key"] = idempotency_key
    console.print_json(data=call(url, lambda c: c.submit(task_type, data, **options)))


def status(task_id: str, url: URL = DEFAULT_URL) -> None:
    """Show a task: its state, times, attempts and last error."""
    console.print_json(data=call(url, lambda c: c.get(task_id)))


def list_tasks(
    state: Annotated[str | None, typer.Option("--status", help="Only this status.")] = None,
    task_type: Annotated[str | None, typer.Option("--type", help="Only this task type.")] = None,
    limit: Annotated[int, typer.Option(min=1, max=500)] = 20,
    url: URL = DEFAULT_URL,
) -> None:
    """List the newest tasks."""
    page = call(url, lambda c: c.list_tasks(state, task_type=task_type, limit=limit))
    table = Table("task_id", "type", "status", "due_time", "attempts", "last_error")
    for t in page["tasks"]:
        table.add_row(
            t["task_id"],
            t["task_type"],
            t["status"],
            t["due_time"],
            str(t["attempts"]),
            (t["last_error"] or "")[:60],
        )
    console.print(table)


def cancel(task_id: str, url: URL = DEFAULT_URL) -> None:
    """Cancel a task, or disable a cron task's schedule."""
    console.print_json(data=call(url, lambda c: c.cancel(task_id)))
