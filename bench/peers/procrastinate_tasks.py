"""The task Procrastinate's workers run:
`procrastinate --app=bench.peers.procrastinate_tasks.app worker`.

The app's PostgreSQL database is `TICKWHEEL_BENCH_DATABASE_URL` (a database of the
benchmark's own), read once, at import; the connector opens no connection until the
worker opens the app.
"""

from __future__ import annotations

import os

from procrastinate import App, PsycopgConnector

from bench.peers import recorder

DATABASE_URL_ENV = "TICKWHEEL_BENCH_DATABASE_URL"
DEFAULT_DATABASE_URL = "postgresql://postgres@127.0.0.1:5432/tickwheel_bench"
TASK = "tickwheel_bench_record"


def database_url() -> str:
    return os.environ.get(DATABASE_URL_ENV, DEFAULT_DATABASE_URL)


app = App(connector=PsycopgConnector(conninfo=database_url()))


@app.task(name=TASK)
async def record(run: str, index: int) -> None:
    recorder.record(run, index)
