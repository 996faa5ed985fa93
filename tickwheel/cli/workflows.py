"""`tickwheel workflow`: submit a workflow from a JSON or YAML file, list, show and cancel
workflows."""

from __future__ import annotations

import json
import sys
from datetime import date
from pathlib import Path
from typing import Annotated, Any

import typer
import yaml

from tickwheel.cli.main import new_typer
from tickwheel.cli.output import NEXT_TOKEN, OUTPUT, Column, Format, emit, field, next_page
from tickwheel.cli.remote import DEFAULT_URL, TOKEN, URL, WORKFLOW_ID, call, fail

workflows = new_typer(
    help="Workflows: graphs of tasks submitted whole (see README, Workflows).",
    no_args_is_help=True,
)
MAX_FILE_BYTES = 16 * 1024 * 1024
NODE_COLUMNS = (
    field("name"),
    field("task_id"),
    field("status"),
    Column("after", lambda t: ", ".join(t["dependencies"]), optional=True),
    field("last_error", text=True),
)
SUMMARY_COLUMNS = (
    field("workflow_id"),
    field("name"),
    field("status"),
    field("task_count", "tasks", optional=True),
    field("created_at", "created (UTC)", optional=True),
)


def register(cli: typer.Typer) -> None:
    cli.add_typer(workflows, name="workflow")


def _title(shown: dict[str, Any]) -> str:
    return f"workflow {shown['workflow_id']} ({shown['name']}): {shown['status']}"


def _show(shown: dict[str, Any], output: Format | None) -> None:
    emit(shown, output, title=_title, rows=lambda w: w["tasks"], columns=NODE_COLUMNS)


@workflows.command("submit")
def submit(
    file: Annotated[
        str, typer.Argument(help="A JSON or YAML file with name and tasks; - reads stdin.")
    ],
    cron: Annotated[
        str | None, typer.Option(help="Launch the workflow at every fire time of this.")
    ] = None,
    timezone: Annotated[
        str | None, typer.Option(help="IANA time zone of --cron (default UTC).")
    ] = None,
    idempotency_key: Annotated[
        str | None, typer.Option(help="A repeat with this key returns the first one.")
    ] = None,
    url: URL = DEFAULT_URL,
    token: TOKEN = None,
    output: OUTPUT = None,
) -> None:
    """Submit a workflow, or with --cron (or a schedule in the file) a recurring one."""
    body = read_document(file)
    if not isinstance(body, dict):
        fail("FILE: a workflow is a mapping with name and tasks", 2)
    if cron is not None and "schedule" in body:
        fail("--cron and the file's schedule cannot be used together: choose one", 2)
    if timezone is not None and cron is None:
        fail("--timezone applies only with --cron", 2)
    if cron is None and "schedule" not in body:
        key = idempotency_key
        _show(call(url, token, lambda c: c.submit_workflow(body, idempotency_key=key)), output)
        return
    options: dict[str, Any] = {"timezone": timezone or "UTC"} if cron else {}
    if idempotency_key is not None:
        body["idempotency_key"] = idempotency_key
    scheduled = call(url, token, lambda c: c.schedule_workflow(body, cron, **options))
    emit(scheduled, output)


@workflows.command("show")
def show(
    workflow_id: WORKFLOW_ID, url: URL = DEFAULT_URL, token: TOKEN = None, output: OUTPUT = None
) -> None:
    """Show a workflow: its status and each task's."""
    _show(call(url, token, lambda c: c.get_workflow(workflow_id)), output)


@workflows.command("ls")
def list_workflows(
    limit: Annotated[int, typer.Option(min=1, max=100)] = 20,
    next_token: NEXT_TOKEN = None,
    url: URL = DEFAULT_URL,
    token: TOKEN = None,
    output: OUTPUT = None,
) -> None:
    """List workflows, newest first, with their status."""
    page = call(url, token, lambda c: c.list_workflows(limit=limit, next_token=next_token))
    emit(page, output, rows=lambda p: p["workflows"], columns=SUMMARY_COLUMNS, footer=next_page)


@workflows.command("cancel")
def cancel(
    workflow_id: WORKFLOW_ID, url: URL = DEFAULT_URL, token: TOKEN = None, output: OUTPUT = None
) -> None:
    """Cancel every task of a workflow not yet finished."""
    emit(call(url, token, lambda c: c.cancel_workflow(workflow_id)), output)


def read_document(file: str) -> Any:
    """A JSON or YAML file's content (JSON is a subset of YAML); `-` reads stdin."""
    try:
        text = sys.stdin.read(MAX_FILE_BYTES + 1) if file == "-" else _text(Path(file))
        if len(text) > MAX_FILE_BYTES:
            raise ValueError(f"larger than {MAX_FILE_BYTES} bytes")
        return json.loads(text) if file.endswith(".json") else _plain(yaml.safe_load(text))
    except (OSError, ValueError, yaml.YAMLError) as error:
        fail(f"FILE: {' '.join(str(error).split())}", 2)  # YAML's spans lines


def _plain(loaded: Any) -> Any:
    """YAML reads `2026-12-01` as a date: the API takes such values as ISO 8601 text."""
    return json.loads(json.dumps(loaded, default=_iso))


def _iso(value: Any) -> str:
    if isinstance(value, date):  # datetimes too
        return value.isoformat()
    raise ValueError(f"{value!r} is not JSON")


def _text(path: Path) -> str:
    with path.open(encoding="utf-8") as f:
        return f.read(MAX_FILE_BYTES + 1)
