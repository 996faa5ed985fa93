"""`submit`, `status`, `ls` and `cancel`: talk to a running Tickwheel over HTTP."""

from __future__ import annotations

import json
import os
from typing import Annotated, Any

import httpx
import typer
from rich.console import Console
from rich.table import Table

from tickwheel.config import env

URL = Annotated[str, typer.Option("--url", envvar=env("url"), help="The Tickwheel server.")]
console = Console()


def register(cli: typer.Typer) -> None:
    cli.command()(submit)
    cli.command()(status)
    cli.command("ls")(list_tasks)
    cli.command()(cancel)


def _call(method: str, url: str, path: str, **kwargs: Any) -> Any:
    token = os.environ.get(env("token"))
    headers = {"Authorization": f"Bearer {token}"} if token else {}
    try:
        response = httpx.request(
            method, url.rstrip("/") + path, timeout=30, headers=headers, **kwargs
        )
    except httpx.HTTPError as error:
        console.print(f"[red]cannot reach {url}: {error}[/red]")
        raise typer.Exit(2) from None
    body = response.json() if response.content else {}
    if response.is_error:
        console.print(f"[red]{response.status_code}: {body.get('message', body)}[/red]")
        raise typer.Exit(1)
    return body


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
    url: URL = "http://127.0.0.1:8700",
) -> None:
    """Submit a task and print its id."""
    try:
        body: dict[str, Any] = {"task_type": task_type, "payload": json.loads(payload)}
    except json.JSONDecodeError as error:
        raise typer.BadParameter(f"not JSON: {error}", param_hint="--payload") from None
    if cron is not None:
        body["schedule"] = {"type": "cron", "cron_expression": cron, "timezone": timezone}
    elif at is not None:
        body["schedule"] = {"type": "delayed", "due_time": at}
    elif delay is not None:
        body["schedule"] = {"type": "delayed", "delay_seconds": delay}
    for name, value in (("max_retries", max_retries), ("queue", queue), ("priority", priority)):
        if value is not None:
            body[name] = value
    console.print_json(data=_call("POST", url, "/api/tasks", json=body))


def status(task_id: str, url: URL = "http://127.0.0.1:8700") -> None:
    """Show a task: its state, times, attempts and last error."""
    console.print_json(data=_call("GET", url, f"/api/tasks/{task_id}"))


def list_tasks(
    state: Annotated[str | None, typer.Option("--status", help="Only this status.")] = None,
    task_type: Annotated[str | None, typer.Option("--type", help="Only this task type.")] = None,
    limit: Annotated[int, typer.Option(min=1, max=500)] = 20,
    url: URL = "http://127.0.0.1:8700",
) -> None:
    """List the newest tasks."""
    params: dict[str, Any] = {"limit": limit}
    if state:
        params["status"] = state
    if task_type:
        params["task_type"] = task_type
    page = _call("GET", url, "/api/tasks", params=params)
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


def cancel(task_id: str, url: URL = "http://127.0.0.1:8700") -> None:
    """Cancel a task, or disable a cron task's schedule."""
    console.print_json(data=_call("DELETE", url, f"/api/tasks/{task_id}"))
