"""JSON log lines: one object per record, with the ids given in `extra=`."""

from __future__ import annotations

import json
import logging
import sys
from datetime import datetime

import pytest

from tickwheel.logs import JsonFormatter, configure


def record(message: str, *args: object, **extra: object) -> logging.LogRecord:
    made = logging.LogRecord(
        "tickwheel.engine.reaper", logging.WARNING, "f.py", 1, message, args, None
    )
    made.__dict__.update(extra)
    return made


def test_a_record_is_one_json_object_with_its_ids() -> None:
    line = JsonFormatter().format(record("lease %s", "expired", task_id="t-1", node_id="n-1"))

    entry = json.loads(line)
    assert "\n" not in line
    assert entry.pop("time").endswith("Z")
    assert entry == {
        "level": "WARNING",
        "logger": "tickwheel.engine.reaper",
        "message": "lease expired",
        "task_id": "t-1",
        "node_id": "n-1",
    }


def test_ids_not_given_are_left_out_and_errors_carry_their_traceback() -> None:
    try:
        raise RuntimeError("boom\nsecond line")
    except RuntimeError:
        failing = record("it failed")
        failing.exc_info = sys.exc_info()

    entry = json.loads(JsonFormatter().format(failing))

    assert "task_id" not in entry and "node_id" not in entry
    assert "RuntimeError: boom" in entry["exception"]
    assert datetime.fromisoformat(entry["time"]).tzinfo is not None


def test_an_unknown_format_is_refused() -> None:
    with pytest.raises(ValueError, match="xml"):
        configure("info", "xml")
