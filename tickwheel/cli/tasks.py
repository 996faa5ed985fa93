"""`submit`, `batch`, `status`, `ls`, `history`, `wait` and `cancel`: tasks on a running
Tickwheel, through the Python client."""

from __future__ import annotations

import json
from datetime import datetime
from typing import Annotated, Any

import typer

from tickwheel.cli.output import NEXT_TOKEN, OUTPUT, emit, field, next_page
from tickwheel.cli.remote import DEFAULT_URL, TASK_ID, TOKEN, URL, call, exclusive, fail, needs
from tickwheel.models import SubmitOptions

TASK_COLUMNS = (
    field("task_id"),
    field("task_type", "type"),
    field("status"),
    field("due_time", "due (UTC)", optional=True),
    field("attempts", "tries", optional=True),
    field("last_error", text=True),
)
SUBMITTED_COLUMNS = (field("task_id"), field("status"), field("due_time", "due (UTC)"))
HISTORY_COLUMNS = (
    field("attempt"),
    field("outcome"),
    field("started_at", "started (UTC)"),
    field("ended_at", "ended (UTC)", optional=True),
    field("worker_id", "worker", optional=True),
    field("error", text=True),
)
FINISHED_WELL = "succeeded"


def register(cli: typer.Typer) -> None:
    cli.command()(submit)
    cli.command()(batch)
    cli.command()(status)
    cli.command("ls")(list_tasks)
    cli.command()(history)
    cli.command()(wait)
    cli.command()(cancel)


def submit(
    task_type: Annotated[str, typer.Argument(help="The task type, e.g. http or noop.")],
    payload: Annotated[str, typer.Option(help="The payload as JSON.")] = "null",
    delay: Annotated[float | None, typer.Option(min=0, help="Run after this many seconds.")] = None,
    at: Annotated[str | None, typer.Option(help="Run at this ISO 8601 time with offset.")] = None,
    cron: Annotated[str | None, typer.Option(help="A 5-field cron expression or @macro.")] = None,
    timezone: Annotated[
        str | None, typer.Option(help="IANA time zone of --cron (default UTC).")
    ] = None,
    jitter_seconds: Annotated[
        int | None, typer.Option(min=0, help="Spread --cron fire times by up to this.")
    ] = None,
    max_retries: Annotated[
        int | None, typer.Option(help="Retries after the first attempt.")
    ] = None,
    queue: Annotated[str | None, typer.Option(help="The queue its workers pull.")] = None,
    priority: Annotated[
        int | None, typer.Option(min=-100, max=100, help="-100..100, higher first.")
    ] = None,
    timeout_seconds: Annotated[
        float | None, typer.Option(help="An attempt running longer fails.")
    ] = None,
    idempotency_key: Annotated[
        str | None, typer.Option(help="A repeat with this key returns the first task.")
    ] = None,
    ordering_key: Annotated[
        str | None, typer.Option(help="Tasks sharing it run one at a time, in order.")
    ] = None,
    limit_key: Annotated[
        str | None,
        typer.Option(help="Tasks sharing it share the limits set for it (scope key)."),
    ] = None,
    after: Annotated[
        list[str] | None, typer.Option(help="A task id that must succeed first (repeat).")
    ] = None,
    expires_after: Annotated[
        float | None,
        typer.Option(help="Not started this many seconds after it is due, it ends expired."),
    ] = None,
    expires_at: Annotated[
        str | None, typer.Option(help="Not started by this ISO 8601 time, it ends expired.")
    ] = None,
    quiet: Annotated[
        bool, typer.Option("--quiet", "-q", help="Print only the task id (for scripts).")
    ] = False,
    url: URL = DEFAULT_URL,
    token: TOKEN = None,
    output: OUTPUT = None,
) -> None:
    """Submit a task and print its id, status and due time."""
    exclusive(delay=delay, at=at, cron=cron)
    exclusive(expires_after=expires_after, expires_at=expires_at)
    exclusive(quiet=quiet or None, output=output)
    needs("--timezone", timezone, "--cron", cron)
    needs("--jitter-seconds", jitter_seconds, "--cron", cron)
    try:
        data = json.loads(payload)
    except json.JSONDecodeError as error:
        fail(f"--payload is not JSON: {error}", 2)
    options: SubmitOptions = {}
    if cron is not None:
        options.update({"cron": cron, "timezone": timezone or "UTC"})
        if jitter_seconds is not None:
            options["jitter_seconds"] = jitter_seconds
    elif at is not None:
        try:
            options["due_time"] = datetime.fromisoformat(at)
        except ValueError as error:
            fail(f"--at: {error}", 2)
    elif delay is not None:
        options["delay_seconds"] = delay
    if expires_at is not None:
        try:
            options["expires_at"] = datetime.fromisoformat(expires_at)
        except ValueError as error:
            fail(f"--expires-at: {error}", 2)
    chosen: dict[str, Any] = {
        "max_retries": max_retries,
        "queue": queue,
        "priority": priority,
        "timeout_seconds": timeout_seconds,
        "idempotency_key": idempotency_key,
        "ordering_key": ordering_key,
        "limit_key": limit_key,
        "dependencies": after or None,
        "expires_after_seconds": expires_after,
    }
    options.update({k: v for k, v in chosen.items() if v is not None})  # type: ignore[typeddict-item]
    submitted = call(url, token, lambda c: c.submit(task_type, data, **options))
    if quiet:
        typer.echo(submitted["task_id"])
        return
    emit(submitted, output)


def batch(
    file: Annotated[
        str,
        typer.Argument(help="A JSON or YAML list of POST /api/tasks bodies; - reads stdin."),
    ],
    url: URL = DEFAULT_URL,
    token: TOKEN = None,
    output: OUTPUT = None,
) -> None:
    """Submit up to 10,000 one-off tasks in one request: all are stored or none is."""
    from tickwheel.cli.workflows import read_document

    bodies = read_document(file)
    if isinstance(bodies, dict) and isinstance(bodies.get("tasks"), list):
        bodies = bodies["tasks"]
    if not isinstance(bodies, list) or not all(isinstance(b, dict) for b in bodies):
        fail("FILE: a batch is a list of task bodies (or a mapping with tasks)", 2)
    submitted = call(url, token, lambda c: c.submit_many(bodies))
    emit(submitted, output, rows=lambda rows: rows, columns=SUBMITTED_COLUMNS)


def status(
    task_id: TASK_ID, url: URL = DEFAULT_URL, token: TOKEN = None, output: OUTPUT = None
) -> None:
    """Show a task: its state, times, attempts and last error."""
    emit(call(url, token, lambda c: c.get(task_id)), output)


def list_tasks(
    state: Annotated[
        list[str] | None, typer.Option("--status", help="Only this status (repeat).")
    ] = None,
    task_type: Annotated[str | None, typer.Option("--type", help="Only this task type.")] = None,
    queue: Annotated[str | None, typer.Option(help="Only this queue.")] = None,
    find: Annotated[
        str | None, typer.Option("--find", help="An exact task id or idempotency key.")
    ] = None,
    limit: Annotated[int, typer.Option(min=1, max=500)] = 20,
    next_token: NEXT_TOKEN = None,
    url: URL = DEFAULT_URL,
    token: TOKEN = None,
    output: OUTPUT = None,
) -> None:
    """List tasks, newest first, a page at a time."""
    page = call(
        url,
        token,
        lambda c: c.list_tasks(
            state, task_type=task_type, queue=queue, q=find, limit=limit, next_token=next_token
        ),
    )
    emit(page, output, rows=lambda p: p["tasks"], columns=TASK_COLUMNS, footer=next_page)


def history(
    task_id: TASK_ID,
    limit: Annotated[int, typer.Option(min=1, max=500)] = 20,
    next_token: NEXT_TOKEN = None,
    url: URL = DEFAULT_URL,
    token: TOKEN = None,
    output: OUTPUT = None,
) -> None:
    """Show a task's attempts, newest first (for a cron task, across its instances)."""
    page = call(url, token, lambda c: c.history(task_id, limit=limit, next_token=next_token))
    emit(page, output, rows=lambda p: p["executions"], columns=HISTORY_COLUMNS, footer=next_page)


def wait(
    task_id: TASK_ID,
    timeout: Annotated[float, typer.Option(min=0, help="Give up after this many seconds.")] = 60,
    url: URL = DEFAULT_URL,
    token: TOKEN = None,
    output: OUTPUT = None,
) -> None:
    """Wait until a task has finished and show it. Exits 0 when it succeeded, 1 when it
    failed or was cancelled, or when it has not finished in time."""
    task = call(url, token, lambda c: c.wait(task_id, timeout_seconds=timeout))
    emit(task, output)
    if task["status"] != FINISHED_WELL:
        raise typer.Exit(1)


def cancel(
    task_id: TASK_ID, url: URL = DEFAULT_URL, token: TOKEN = None, output: OUTPUT = None
) -> None:
    """Cancel a task, or disable a cron task's schedule."""
    emit(call(url, token, lambda c: c.cancel(task_id)), output)
