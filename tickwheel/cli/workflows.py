"""`tickwheel workflow`: submit a workflow from a JSON or YAML file, show it, cancel it."""

from __future__ import annotations

import json
import sys
from datetime import date
from pathlib import Path
from typing import Annotated, Any

import typer
import yaml
from rich.table import Table

from tickwheel.cli.tasks import URL, call, console
from tickwheel.client.base import DEFAULT_URL

workflows = typer.Typer(
    help="Workflows: graphs of tasks submitted whole (see README, Workflows).",
    no_args_is_help=True,
)
MAX_FILE_BYTES = 16 * 1024 * 1024


@workflows.command("submit")
def submit(
    file: Annotated[
        str, typer.Argument(help="A JSON or YAML file with name and tasks; - reads stdin.")
    ],
    cron: Annotated[
        str | None, typer.Option(help="Launch the workflow at every fire time of this.")
    ] = None,
    timezone: Annotated[str, typer.Option(help="IANA time zone of --cron.")] = "UTC",
    idempotency_key: Annotated[
        str | None, typer.Option(help="A repeat with this key returns the first one.")
    ] = None,
    url: URL = DEFAULT_URL,
) -> None:
    """Submit a workflow, or with --cron (or a schedule in the file) a recurring one."""
    body = _read(file)
    if cron is None and "schedule" not in body:
        shown = call(url, lambda c: c.submit_workflow(body, idempotency_key=idempotency_key))
        _print_workflow(shown)
        return
    options: dict[str, Any] = {"timezone": timezone} if cron else {}
    if idempotency_key is not None:
        body["idempotency_key"] = idempotency_key
    console.print_json(data=call(url, lambda c: c.schedule_workflow(body, cron, **options)))


@workflows.command("show")
def show(workflow_id: str, url: URL = DEFAULT_URL) -> None:
    """Show a workflow: its status and each task's."""
    _print_workflow(call(url, lambda c: c.get_workflow(workflow_id)))


@workflows.command("cancel")
def cancel(workflow_id: str, url: URL = DEFAULT_URL) -> None:
    """Cancel every task of a workflow not yet finished."""
    console.print_json(data=call(url, lambda c: c.cancel_workflow(workflow_id)))


def _read(file: str) -> dict[str, Any]:
    """The file's body: JSON, or YAML (which JSON is a subset of)."""
    try:
        text = sys.stdin.read(MAX_FILE_BYTES + 1) if file == "-" else _text(Path(file))
        if len(text) > MAX_FILE_BYTES:
            raise ValueError(f"larger than {MAX_FILE_BYTES} bytes")
        body = json.loads(text) if file.endswith(".json") else _plain(yaml.safe_load(text))
    except (OSError, ValueError, yaml.YAMLError) as error:
        raise typer.BadParameter(str(error), param_hint="FILE") from None
    if not isinstance(body, dict):
        raise typer.BadParameter("a workflow is a mapping with name and tasks", param_hint="FILE")
    return body


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


def _print_workflow(shown: dict[str, Any]) -> None:
    console.print(f"workflow {shown['workflow_id']} ({shown['name']}): {shown['status']}")
    table = Table("name", "task_id", "status", "after", "last_error")
    for t in shown["tasks"]:
        after = ", ".join(t["dependencies"])
        table.add_row(t["name"], t["task_id"], t["status"], after, (t["last_error"] or "")[:60])
    console.print(table)
