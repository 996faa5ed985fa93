"""`pip install tickwheel`, with no extra, into a fresh environment: what it carries and
what it runs. The base install runs embedded (`tickwheel up` on SQLite) and brings
neither the peers' libraries nor PostgreSQL's and Redis's clients; a URL that needs one
says which extra to install, in one line; the benchmarks stay in the checkout.

The install is the real one, dependencies and all, from this checkout's files (a copy,
so the build leaves nothing in the work tree), through the package index pip is
configured with: about 40 s, most of it pip resolving.
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from harness import Tickwheel

pytestmark = [pytest.mark.slow, pytest.mark.timeout(300)]

ROOT = Path(__file__).resolve().parents[2]
PEERS = ["huey", "dramatiq", "celery", "rq", "arq", "saq", "procrastinate"]
DISTRIBUTED = ["asyncpg", "redis", "hiredis"]
SHIPPED = [  # package data the embedded and the distributed modes read at run time
    "tickwheel/py.typed",
    "tickwheel/dashboard/static/index.html",
    "tickwheel/queue/lua/push.lua",
    "tickwheel/storage/sqlite/migrations/0001_initial.sql",
    "tickwheel/storage/postgres/schema.sql",
]

# Run by the fresh environment's interpreter, outside the checkout: the modules and
# distributions it can see, and the files its tickwheel installed.
PROBE = """
import importlib.metadata as metadata, importlib.util, json, sys
names = sys.argv[1:]
print(json.dumps({
    "modules": [n for n in names if importlib.util.find_spec(n) is not None],
    "distributions": sorted({(d.metadata["Name"] or "").lower() for d in metadata.distributions()}),
    "files": [str(f) for f in metadata.distribution("tickwheel").files or []],
}))
"""


def run(
    *command: str | Path, cwd: Path, env: dict[str, str] | None = None, timeout: float = 60
) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [str(part) for part in command],
        cwd=cwd,
        env=None if env is None else {**os.environ, **env},
        capture_output=True,
        text=True,
        timeout=timeout,
    )


@pytest.fixture(scope="module")
def venv(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A fresh virtual environment holding `pip install <this checkout>`, no extras."""
    folder = tmp_path_factory.mktemp("lean")
    source = folder / "source"
    listed = run("git", "ls-files", "-z", "--cached", "--others", "--exclude-standard", cwd=ROOT)
    assert listed.returncode == 0, listed.stderr
    for name in filter(None, listed.stdout.split("\0")):
        if (ROOT / name).is_file():  # a file deleted but not yet staged is still listed
            (source / name).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(ROOT / name, source / name)
    env = folder / "venv"
    made = run(sys.executable, "-m", "venv", "--without-pip", env, cwd=folder)
    assert made.returncode == 0, made.stderr
    # this environment's pip installs into the new one (saves bootstrapping a pip there);
    # no byte-compiling of what it installs (Python does it on import)
    python = env / "bin" / "python"
    started = time.monotonic()
    installed = run(
        sys.executable, "-m", "pip", "--python", python, "install", "--quiet", "--no-compile",
        source, cwd=folder, timeout=240,
    )  # fmt: skip
    assert installed.returncode == 0, installed.stderr[-3000:]
    print(f"pip install into a fresh venv: {time.monotonic() - started:.1f} s")
    return env


def probe(venv: Path, names: list[str]) -> dict[str, list[str]]:
    done = run(venv / "bin" / "python", "-c", PROBE, *names, cwd=venv.parent)
    assert done.returncode == 0, done.stderr
    found: dict[str, list[str]] = json.loads(done.stdout)
    return found


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
