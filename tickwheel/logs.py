"""Logging set up by the CLI: text for people, or one JSON object per line for machines.

`TICKWHEEL_LOG_FORMAT=json` makes every record a JSON object with `time`, `level`,
`logger` and `message`, plus the ids a call gave in `extra=` (`task_id`, `node_id`,
...), so a log pipeline can follow one task across processes without parsing text.
"""

from __future__ import annotations

import json
import logging
from datetime import UTC, datetime
from typing import Any

FORMATS = ("text", "json")
TEXT_FORMAT = "%(asctime)s %(levelname)s %(name)s: %(message)s"
# Ids engine code passes in `extra=`: copied into the JSON object when present.
EXTRA_FIELDS = ("task_id", "task_type", "node_id", "worker_id", "attempt")


class JsonFormatter(logging.Formatter):
    def format(self, record: logging.LogRecord) -> str:
        moment = datetime.fromtimestamp(record.created, UTC)
        entry: dict[str, Any] = {
            "time": moment.isoformat(timespec="milliseconds").replace("+00:00", "Z"),
            "level": record.levelname,
            "logger": record.name,
            "message": record.getMessage(),
        }
        for name in EXTRA_FIELDS:
            value = record.__dict__.get(name)
            if value is not None:
                entry[name] = value
        if record.exc_info:
            entry["exception"] = self.formatException(record.exc_info)
        return json.dumps(entry, default=str)


def configure(level: str, log_format: str) -> None:
    """Log to stderr at `level` in `log_format` ("text" or "json")."""
    if log_format not in FORMATS:
        raise ValueError(f"log format {log_format!r} is not one of {', '.join(FORMATS)}")
    formatter = JsonFormatter() if log_format == "json" else logging.Formatter(TEXT_FORMAT)
    handler = logging.StreamHandler()
    handler.setFormatter(formatter)
    logging.basicConfig(level=level.upper(), handlers=[handler])
    if logging.getLogger().level > logging.DEBUG:
        # asyncpg's pool logs every failed reconnect with a traceback; the store's
        # `Outage` already tells the outage, in a few lines.
        logging.getLogger("asyncpg.pool").setLevel(logging.ERROR)
