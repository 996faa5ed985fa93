"""`redrive`, `priority`, `pause`, `resume`, `schedules`, `fire-times`, `queues`,
`nodes`, `health`, `stats` and `metrics`: operating a running Tickwheel, through the
Python client."""

from __future__ import annotations

from datetime import datetime
from typing import Annotated, Any

import typer

from tickwheel.cli.output import NEXT_TOKEN, OUTPUT, Column, emit, field, next_page
from tickwheel.cli.remote import DEFAULT_URL, SCHEDULE_ID, TASK_ID, TOKEN, URL, call, fail, needs

SCHEDULE_COLUMNS = (
    field("schedule_id"),
    field("task_type", "type"),
    field("status"),
    field("cron_expression", "cron"),
    field("next_fire_time", "next (UTC)", optional=True),
    field("timezone", optional=True),
)
FIRE_TIME_COLUMNS = (
    field("fire_time", "fires (UTC)"),
    Column("local time", lambda row: _local(row["local_time"])),
    field("note", text=True),
)
QUEUE_COLUMNS = (field("queue"), field("depth"))
STATS_COLUMNS = (field("status"), field("tasks"))
NODE_COLUMNS = (
    field("role"),
    field("id"),
    field("partitions", optional=True),
    field("queues", text=True),
)


def register(cli: typer.Typer) -> None:
    cli.command()(redrive)
    cli.command()(priority)
    cli.command()(pause)
    cli.command()(resume)
    cli.command()(schedules)
    cli.command("fire-times")(fire_times)
    cli.command()(queues)
    cli.command()(nodes)
    cli.command()(health)
    cli.command()(stats)
    cli.command()(metrics)


def redrive(
    task_ids: Annotated[
        list[str], typer.Argument(metavar="TASK_ID...", help="Failed tasks (up to 1,000).")
    ],
    url: URL = DEFAULT_URL,
    token: TOKEN = None,
    output: OUTPUT = None,
) -> None:
    """Send failed tasks back to work: pending, due now, attempts reset."""
    emit(call(url, token, lambda c: c.redrive(task_ids)), output)


def priority(
    task_id: TASK_ID,
    value: Annotated[
        int, typer.Argument(metavar="PRIORITY", min=-100, max=100, help="-100..100, higher first.")
    ],
    url: URL = DEFAULT_URL,
    token: TOKEN = None,
    output: OUTPUT = None,
) -> None:
    """Change a pending task's priority."""
    emit(call(url, token, lambda c: c.set_priority(task_id, value)), output)


def pause(
    schedule_id: SCHEDULE_ID, url: URL = DEFAULT_URL, token: TOKEN = None, output: OUTPUT = None
) -> None:
    """Pause a recurring task: its pending instance is cancelled until it resumes."""
    emit(call(url, token, lambda c: c.pause(schedule_id)), output)


def resume(
    schedule_id: SCHEDULE_ID, url: URL = DEFAULT_URL, token: TOKEN = None, output: OUTPUT = None
) -> None:
    """Resume a paused recurring task from its next fire time."""
    emit(call(url, token, lambda c: c.resume(schedule_id)), output)


def schedules(
    state: Annotated[
        list[str] | None,
        typer.Option("--status", help="active, paused or cancelled (repeat; default both first)."),
    ] = None,
    limit: Annotated[int, typer.Option(min=1, max=500)] = 50,
    next_token: NEXT_TOKEN = None,
    url: URL = DEFAULT_URL,
    token: TOKEN = None,
    output: OUTPUT = None,
) -> None:
    """List recurring schedules, newest first, with their next fire time."""
    page = call(url, token, lambda c: c.list_schedules(state, limit=limit, next_token=next_token))
    emit(page, output, rows=lambda p: p["schedules"], columns=SCHEDULE_COLUMNS, footer=next_page)


def fire_times(
    schedule_id: Annotated[
        str | None, typer.Argument(help="A recurring task's schedule id (or give --cron).")
    ] = None,
    cron: Annotated[
        str | None, typer.Option(help="A cron expression to try before submitting it.")
    ] = None,
    timezone: Annotated[
        str | None, typer.Option(help="IANA time zone of --cron (default UTC).")
    ] = None,
    count: Annotated[int, typer.Option(min=1, max=100, help="How many fire times.")] = 10,
    url: URL = DEFAULT_URL,
    token: TOKEN = None,
    output: OUTPUT = None,
) -> None:
    """When a schedule (or a cron expression) fires next, daylight-saving changes told."""
    if (schedule_id is None) == (cron is None):
        fail("give a SCHEDULE_ID or --cron EXPRESSION (one of them)", 2)
    needs("--timezone", timezone, "--cron", cron)
    if cron is not None:
        zone = timezone or "UTC"
        found = call(url, token, lambda c: c.cron_fire_times(cron, zone, count=count))
    else:
        assert schedule_id is not None
        found = call(url, token, lambda c: c.fire_times(schedule_id, count=count))
    emit(found, output, rows=lambda d: d["fire_times"], columns=FIRE_TIME_COLUMNS)


def _local(text: str) -> str:
    """A local time as people read it: the wall time and its UTC offset (+00:00 for
    UTC, which the API writes as Z)."""
    moment = datetime.fromisoformat(text)
    return f"{moment:%Y-%m-%d %H:%M} {moment.isoformat()[-6:]}"


def queues(url: URL = DEFAULT_URL, token: TOKEN = None, output: OUTPUT = None) -> None:
    """Ready-queue depth per queue, and whether submissions are admitted."""

    def rows(data: dict[str, Any]) -> list[dict[str, Any]]:
        return [{"queue": name, "depth": depth} for name, depth in data["depth"].items()]

    def admission(data: dict[str, Any]) -> str:
        state = "admitting" if data["admitting"] else "refusing submissions (429)"
        return f"{state}: backlog {data['backlog']}, {data['drain_per_second']:.0f}/s drained"

    emit(
        call(url, token, lambda c: c.queues()),
        output,
        rows=rows,
        columns=QUEUE_COLUMNS,
        footer=admission,
    )


def nodes(url: URL = DEFAULT_URL, token: TOKEN = None, output: OUTPUT = None) -> None:
    """The scheduler nodes alive with their partitions, and the workers alive."""

    def rows(data: dict[str, Any]) -> list[dict[str, Any]]:
        found = [
            {"role": "scheduler", "id": n["node_id"], "partitions": len(n["partitions"])}
            for n in data["schedulers"]
        ]
        found += [
            {
                "role": f"worker ({w['kind']})",
                "id": w["worker_id"],
                "partitions": None,
                "queues": ",".join(w["queues"]),
            }
            for w in data["workers"]
        ]
        return found

    def unowned(data: dict[str, Any]) -> str | None:
        missing = data["unowned_partitions"]
        return f"partitions no node holds: {missing}" if missing else None

    emit(
        call(url, token, lambda c: c.nodes()),
        output,
        rows=rows,
        columns=NODE_COLUMNS,
        footer=unowned,
    )


def health(url: URL = DEFAULT_URL, token: TOKEN = None, output: OUTPUT = None) -> None:
    """The server's health check: partitions owned, wheel size, ready depth, in flight."""
    emit(call(url, token, lambda c: c.health()), output)


def stats(url: URL = DEFAULT_URL, token: TOKEN = None, output: OUTPUT = None) -> None:
    """Tasks per status (the whole cluster), and trigger and start lateness over the
    last minute; JSON adds the dashboard's per-second series."""

    def rows(data: dict[str, Any]) -> list[dict[str, Any]]:
        return [{"status": name, "tasks": count} for name, count in data["counts"].items()]

    def lateness(data: dict[str, Any]) -> str:
        def ms(value: float | None) -> str:
            return "-" if value is None else f"{value:.1f} ms"

        parts = [
            f"{kind} p50 {ms(found['p50'])}, p99 {ms(found['p99'])}"
            for kind, found in data["lateness_ms"].items()
        ]
        return "lateness over the last minute: " + "; ".join(parts)

    emit(
        call(url, token, lambda c: c.stats()),
        output,
        rows=rows,
        columns=STATS_COLUMNS,
        footer=lateness,
    )


def metrics(url: URL = DEFAULT_URL, token: TOKEN = None) -> None:
    """This server process's metrics, in the Prometheus text format."""
    typer.echo(call(url, token, lambda c: c.metrics()), nl=False)
