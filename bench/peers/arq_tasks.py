"""The task arq's workers run: `arq bench.peers.arq_tasks.WorkerSettings`.

The worker's Redis is the sink's URL, read once, at import, as arq reads its settings
class; arq's own logging is raised to WARNING through `--custom-log-dict LOG_CONFIG`,
the CLI's documented hook (its default logs every job at INFO).
"""

from __future__ import annotations

from typing import Any, ClassVar

from arq.connections import RedisSettings

from bench.peers import recorder, sink

TASK = "record"


async def record(ctx: dict[str, Any], run: str, index: int) -> None:
    recorder.record(run, index)


class WorkerSettings:
    """arq's defaults throughout (10 jobs at a time, a poll every 0.5 s)."""

    functions: ClassVar[list[Any]] = [record]
    redis_settings = RedisSettings.from_dsn(sink.sink_url())


LOG_CONFIG: dict[str, Any] = {
    "version": 1,
    "disable_existing_loggers": False,
    "handlers": {"console": {"class": "logging.StreamHandler", "level": "WARNING"}},
    "loggers": {"arq": {"handlers": ["console"], "level": "WARNING"}},
}
