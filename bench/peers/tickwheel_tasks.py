"""The handlers Tickwheel's workers run in `tickwheel bench compare`: one task type whose
body is the shared `record`, as every peer's is, registered on an `App` as a user would.

`tickwheel up --app bench.peers.tickwheel_tasks:app`, or the same `--app` on
`tickwheel local-cluster`. The payload is `{"run": ..., "index": ...}`.
"""

from __future__ import annotations

from typing import Any

from bench.peers import recorder
from tickwheel.worker.context import TaskContext
from tickwheel.worker.registry import App

TASK = "tickwheel_bench.record"
APP = f"{__name__}:app"

app = App()


@app.task(TASK)
async def record(ctx: TaskContext, payload: dict[str, Any]) -> None:
    recorder.record(payload["run"], payload["index"])
