"""What the CLI prints: JSON for programs, a table for people, and never a cut id.

`--output json|table` (or `TICKWHEEL_OUTPUT`) chooses; by default a table on a terminal
and JSON otherwise, so `tickwheel ls | jq` reads every field. A table fits the
terminal by dropping its least useful columns and shortening free text (an error
message) with an ellipsis; an id or a name is printed whole or its column is left
out, and when even the ids do not fit, each row is printed as lines of `name: value`.
Plain text, without Rich: a command that talks to a server starts faster without it.
"""

from __future__ import annotations

import json
import os
import shutil
import sys
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from enum import StrEnum
from typing import Annotated, Any

import typer

from tickwheel.config import env

GAP = "  "
MIN_TEXT = 12  # a column of free text narrower than this is left out


class Format(StrEnum):
    JSON = "json"
    TABLE = "table"


OUTPUT = Annotated[
    Format | None,
    typer.Option(
        "--output",
        "-o",
        envvar=env("output"),
        case_sensitive=False,
        help="json or table (default: a table on a terminal, JSON otherwise).",
    ),
]

NEXT_TOKEN = Annotated[
    str | None, typer.Option(help="Where the page starts (a page's next_token).")
]


def chosen(output: Format | None) -> Format:
    if output is not None:
        return output
    return Format.TABLE if sys.stdout.isatty() else Format.JSON


@dataclass(frozen=True, slots=True)
class Column:
    header: str
    value: Callable[[Mapping[str, Any]], Any]
    text: bool = False  # free text: shortened with an ellipsis to fit, or left out
    optional: bool = False  # left out when the terminal is too narrow for it


def field(name: str, header: str | None = None, **kinds: bool) -> Column:
    """A column showing one field of each row."""
    return Column(header or name, lambda row: row.get(name), **kinds)


def emit(
    data: Any,
    output: Format | None,
    *,
    rows: Callable[[Any], Sequence[Mapping[str, Any]]] | None = None,
    columns: Sequence[Column] = (),
    title: Callable[[Any], str] | None = None,
    footer: Callable[[Any], str | None] = lambda data: None,
) -> None:
    """Print `data` as JSON, or as a table of `rows(data)` (a record of `name: value`
    lines without `rows`) under its `title`, with its `footer` on stderr."""
    if chosen(output) is Format.JSON:
        typer.echo(json.dumps(data, indent=2, ensure_ascii=False))
        return
    if title is not None:
        typer.echo(title(data))
    if rows is None:
        typer.echo(record(sentences(data)))
    else:
        typer.echo(table(rows(data), columns, width()))
    note = footer(data)
    if note:
        typer.echo(note, err=True)


def next_page(data: dict[str, Any]) -> str | None:
    """The footer of a page with more after it (on stderr, so a pipe reads only rows)."""
    token = data.get("next_token")
    return f"more: add --next-token {token}" if token else None


def width() -> int:
    """The terminal's columns (`COLUMNS` when set, 80 when not on a terminal)."""
    try:
        return max(20, int(os.environ["COLUMNS"]))
    except (KeyError, ValueError):
        return shutil.get_terminal_size((80, 24)).columns


def cell(value: Any) -> str:
    """A value as table text: times in UTC to the second, structures as compact JSON."""
    if value is None:
        return ""
    if isinstance(value, bool):
        return "yes" if value else "no"
    if isinstance(value, str):
        return _time(value) or " ".join(value.split())
    if isinstance(value, dict):
        value = {k: v for k, v in value.items() if v is not None}
    if isinstance(value, dict | list):
        return json.dumps(value, separators=(",", ":"), ensure_ascii=False)
    return str(value)


def _time(text: str) -> str | None:
    if len(text) < 20 or text[4] != "-" or text[10] != "T":
        return None
    try:
        moment = datetime.fromisoformat(text)
    except ValueError:
        return None
    if moment.tzinfo is None:
        return None
    return moment.astimezone(UTC).strftime("%Y-%m-%d %H:%M:%S")


def table(rows: Sequence[Mapping[str, Any]], columns: Sequence[Column], room: int) -> str:
    """The rows as a table at most `room` characters wide, or as records when even the
    columns that may not be left out do not fit."""
    cells = [[cell(c.value(row)) for c in columns] for row in rows]
    widths = [
        max([len(c.header), *(len(line[i]) for line in cells)]) for i, c in enumerate(columns)
    ]
    shown = list(range(len(columns)))

    def needed() -> int:
        fixed = sum(min(widths[i], MIN_TEXT) if columns[i].text else widths[i] for i in shown)
        return fixed + len(GAP) * (len(shown) - 1)

    droppable = [i for i, c in enumerate(columns) if c.optional or c.text]
    while needed() > room and droppable:
        shown.remove(droppable.pop())
    if needed() > room:
        return "\n\n".join(
            record({c.header: line[i] for i, c in enumerate(columns)}) for line in cells
        )
    spare = room - needed()
    for i in shown:  # free text gets what is left, up to its length
        if columns[i].text and widths[i] > MIN_TEXT:
            grown = min(widths[i], MIN_TEXT + spare)
            spare -= grown - MIN_TEXT
            widths[i] = grown
    lines = [[c.header for c in columns], *cells]
    return "\n".join(GAP.join(_fit(line[i], widths[i]) for i in shown).rstrip() for line in lines)


def _fit(text: str, size: int) -> str:
    return text.ljust(size) if len(text) <= size else text[: size - 1] + "…"


def sentences(data: Mapping[str, Any]) -> Mapping[str, Any]:
    """A record's explanations as sentences for people: what a task waits on and the
    warnings of a submission, joined by semicolons, instead of JSON."""
    shown = dict(data)
    waits = shown.get("waiting_on")
    if isinstance(waits, list) and waits:
        shown["waiting_on"] = "; ".join(str(w.get("message", w)) for w in waits)
    warnings = shown.get("warnings")
    if isinstance(warnings, list) and warnings:
        shown["warnings"] = "; ".join(map(str, warnings))
    return shown


def record(data: Mapping[str, Any]) -> str:
    """One object as `name: value` lines, values whole (the terminal wraps them)."""
    if not data:
        return ""
    size = max(len(str(k)) for k in data)
    return "\n".join(f"{str(k) + ':':<{size + 1}} {cell(v)}".rstrip() for k, v in data.items())
