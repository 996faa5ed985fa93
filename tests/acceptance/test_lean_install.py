"""`pip install tickwheel`, with no extra, into a fresh environment: what it carries and
what it runs. The base install runs embedded (`tickwheel up` on SQLite) and brings
neither the peers' libraries nor PostgreSQL's and Redis's clients; a URL that needs one
says which extra to install, in one line; the benchmarks stay in the checkout.

The install is the real one, dependencies and all, from this checkout's files (a copy,
so the build leaves nothing in the work tree), through the package index pip is
configured with: about 40 s, most of it pip resolving.
"""

from __future__ import annotations

import signal
import time
from pathlib import Path

import pytest
from harness import Tickwheel
from installs import copy_checkout, fresh_venv, probe, run

pytestmark = [pytest.mark.slow, pytest.mark.timeout(300)]

PEERS = ["huey", "dramatiq", "celery", "rq", "arq", "saq", "procrastinate"]
DISTRIBUTED = ["asyncpg", "redis", "hiredis"]
SHIPPED = [  # package data the embedded and the distributed modes read at run time
    "tickwheel/py.typed",
    "tickwheel/dashboard/static/index.html",
    "tickwheel/queue/lua/push.lua",
    "tickwheel/storage/sqlite/migrations/0001_initial.sql",
    "tickwheel/storage/postgres/schema.sql",
]


@pytest.fixture(scope="module")
def venv(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A fresh virtual environment holding `pip install <this checkout>`, no extras."""
    folder = tmp_path_factory.mktemp("lean")
    source = copy_checkout(folder / "source")
    return fresh_venv(folder / "venv", source)


def test_the_base_install_brings_no_peer_and_no_distributed_client(venv: Path) -> None:
    found = probe(venv, [*PEERS, *DISTRIBUTED, "psycopg", "bench"])
    assert found["modules"] == []
    assert not set(found["distributions"]) & {*PEERS, *DISTRIBUTED, "psycopg"}


def test_the_wheel_holds_the_package_and_its_data_alone(venv: Path) -> None:
    files = probe(venv, [])["files"]
    assert not [f for f in files if f.startswith(("bench/", "tickwheel/bench/", "tests/"))]
    assert not [f for f in files if not f.startswith(("tickwheel/", "tickwheel-", "../"))]
    assert set(SHIPPED) <= set(files)


def test_tickwheel_up_serves_and_runs_a_task(
    venv: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("PYTHONPATH", raising=False)  # nothing of the checkout's
    tw = Tickwheel(tmp_path / "lean.db", command=str(venv / "bin" / "tickwheel")).start(30)
    try:
        with tw.client() as client:
            assert client.get("/healthz").status_code == 200
            task = client.post("/api/tasks", json={"task_type": "noop"}).json()
            deadline = time.monotonic() + 20
            while client.get(f"/api/tasks/{task['task_id']}").json()["status"] != "succeeded":
                assert time.monotonic() < deadline, "the noop task did not succeed"
                time.sleep(0.05)
    finally:
        # uvicorn ends by re-raising SIGTERM
        assert tw.stop() in (0, -signal.SIGTERM), tw.log.read_text()[-3000:]


def test_a_postgresql_url_names_the_extra_in_one_line(venv: Path, tmp_path: Path) -> None:
    tickwheel = venv / "bin" / "tickwheel"
    url = "postgresql://postgres@127.0.0.1:5432/postgres"
    line = "the PostgreSQL store needs asyncpg: pip install 'tickwheel[postgres]'\n"
    done = run(tickwheel, "up", "--database-url", url, cwd=tmp_path)
    assert (done.returncode, done.stderr) == (2, line)
    cluster = {"TICKWHEEL_DATABASE_URL": url, "TICKWHEEL_REDIS_URL": "redis://127.0.0.1:6379/0"}
    done = run(tickwheel, "scheduler", cwd=tmp_path, env=cluster)
    assert (done.returncode, done.stderr) == (2, line)


def test_bench_says_it_runs_from_a_checkout(venv: Path, tmp_path: Path) -> None:
    done = run(venv / "bin" / "tickwheel", "bench", "compare", cwd=tmp_path)
    assert done.returncode == 2
    assert "source checkout" in done.stderr
