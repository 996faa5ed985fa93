"""Tables fit the terminal without cutting an id; JSON when not on a terminal."""

from __future__ import annotations

import json

import pytest

from tickwheel.cli import output
from tickwheel.cli.output import Format, field, table

ID = "01a24165-6ab1-7937-9b09-38d910e19b80"
ROWS = [
    {
        "task_id": ID,
        "task_type": "http",
        "status": "upstream_failed",
        "due_time": "2026-12-04T14:11:35.123000Z",
        "attempts": 3,
        "last_error": "PermanentFailure: HTTP 404 from http://127.0.0.1:8700/nowhere",
    }
]
COLUMNS = (
    field("task_id"),
    field("task_type", "type"),
    field("status"),
    field("due_time", "due (UTC)", optional=True),
    field("attempts", "tries", optional=True),
    field("last_error", text=True),
)


@pytest.mark.parametrize("room", [200, 120, 100, 80, 66])
def test_a_table_fits_and_keeps_ids_whole(room: int) -> None:
    shown = table(ROWS, COLUMNS, room)
    assert ID in shown
    assert all(len(line) <= room for line in shown.splitlines())
    assert room < 80 or "2026-12-04 14:11:35" in shown  # in UTC, to the second


def test_free_text_is_shortened_then_left_out_optional_columns_dropped() -> None:
    wide = table(ROWS, COLUMNS, 200)
    assert "tries" in wide and ROWS[0]["last_error"] in wide
    medium = table(ROWS, COLUMNS, 110)
    assert "…" in medium and "tries" in medium
    narrow = table(ROWS, COLUMNS, 80)
    assert "tries" not in narrow and "last_error" not in narrow and "upstream_failed" in narrow


def test_too_narrow_for_the_ids_prints_records() -> None:
    shown = table(ROWS, COLUMNS, 40)
    assert f"task_id:    {ID}" in shown
    assert "last_error: PermanentFailure: HTTP 404 from http://127.0.0.1:8700/nowhere" in shown


def test_json_unless_on_a_terminal(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    output.emit({"page": ROWS}, None, rows=lambda d: d["page"], columns=COLUMNS)
    assert json.loads(capsys.readouterr().out) == {"page": ROWS}
    monkeypatch.setattr("sys.stdout.isatty", lambda: True)
    assert output.chosen(None) is Format.TABLE
    monkeypatch.setenv("COLUMNS", "80")
    output.emit({"page": ROWS}, Format.TABLE, rows=lambda d: d["page"], columns=COLUMNS)
    assert ID in capsys.readouterr().out


def test_cells() -> None:
    assert output.cell(None) == ""
    assert output.cell(True) == "yes"
    assert output.cell({"type": "cron", "timezone": None}) == '{"type":"cron"}'
    assert output.cell("2026-12-04T15:11:35+01:00") == "2026-12-04 14:11:35"
    assert output.cell("not\na time") == "not a time"
    assert output.record({"a": 1, "long_name": "x"}) == "a:         1\nlong_name: x"
