"""How fast the dashboard's pages load with many tasks stored (real `tickwheel up`, real
headless Chromium through Playwright).

    .venv/bin/python bench/dashboard_load.py --stored 1000000

Stores N no-op tasks in a fresh SQLite file (7 in 10 succeeded, 1 in 10 failed, the
rest pending tomorrow), serves it with `tickwheel up --no-worker`, then opens each page
5 times in a fresh browser tab and times navigation to the page's data on screen.
Prints the median per page; the last line is the result as JSON.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import platform
import sqlite3
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import httpx
from playwright.sync_api import sync_playwright

from tickwheel.config import Settings
from tickwheel.engine.node import Node
from tickwheel.engine.tasks import ScheduleRequest, TaskRequest
from tickwheel.models import ScheduleType

TICKWHEEL = str(Path(sys.executable).with_name("tickwheel"))
CHROMIUM = os.environ.get("TICKWHEEL_TEST_CHROMIUM", "/usr/bin/chromium")
ARGS = ["--no-sandbox", "--disable-gpu", "--disable-background-networking", "--no-first-run"]
PORT = 8791


async def fill(path: Path, stored: int) -> None:
    settings = Settings(database_url=f"sqlite:///{path}")
    async with Node(settings=settings, run_worker=False) as node:
        tomorrow = node.clock.now_ms() + 86_400_000
        request = TaskRequest("noop", None, ScheduleRequest(ScheduleType.DELAYED, due_ms=tomorrow))
        for start in range(0, stored, 10_000):
            await node.service.submit_many([request] * min(10_000, stored - start))
    with sqlite3.connect(path) as db:  # ended tasks, as a long-running system has them
        db.execute("UPDATE tasks SET status = 'succeeded' WHERE seq % 10 < 7")
        db.execute("UPDATE tasks SET status = 'failed', last_error = 'boom' WHERE seq % 10 = 7")


def serve(path: Path) -> subprocess.Popen[bytes]:
    env = {**os.environ, "TICKWHEEL_LOG_LEVEL": "warning"}
    command = [
        TICKWHEEL,
        "up",
        "--no-worker",
        "--port",
        str(PORT),
        "--database-url",
        f"sqlite:///{path}",
    ]
    process = subprocess.Popen(command, env=env)
    for _ in range(300):
        try:
            if httpx.get(f"http://127.0.0.1:{PORT}/healthz").status_code == 200:
                return process
        except httpx.HTTPError:
            time.sleep(0.1)
    raise SystemExit("tickwheel up did not start")


def pages() -> dict[str, tuple[str, str]]:
    """Page -> (URL fragment, the selector that shows its data)."""
    base = f"http://127.0.0.1:{PORT}"
    failed = httpx.get(f"{base}/api/tasks", params={"status": "failed", "limit": 1}).json()
    task_id = failed["tasks"][0]["task_id"]
    return {
        "overview": ("/#/", "#counts .card"),
        "tasks (newest)": ("/#/tasks", "tr[data-task-id]"),
        "tasks, status failed": ("/#/tasks?status=failed", "tr[data-task-id]"),
        "tasks, search by id": (f"/#/tasks?q={task_id}", "tr[data-task-id]"),
        "task page": (f"/#/task/{task_id}", "dl.fields .status"),
        "dead letters": ("/#/dead", "tr[data-task-id]"),
    }


def time_pages(runs: int) -> dict[str, float]:
    timings: dict[str, float] = {}
    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=CHROMIUM, args=ARGS)
        for name, (fragment, selector) in pages().items():
            samples = []
            for _ in range(runs):
                tab = browser.new_page()
                started = time.perf_counter()
                tab.goto(f"http://127.0.0.1:{PORT}{fragment}")
                tab.wait_for_selector(selector, timeout=60_000)
                samples.append((time.perf_counter() - started) * 1000)
                tab.close()
            timings[name] = round(statistics.median(samples), 1)
            print(f"{name:24} {timings[name]:8.1f} ms (median of {runs})", flush=True)
        browser.close()
    return timings


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--stored", type=int, default=1_000_000)
    parser.add_argument("--runs", type=int, default=5)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as folder:
        path = Path(folder) / "dashboard.db"
        started = time.perf_counter()
        asyncio.run(fill(path, args.stored))
        print(f"stored {args.stored:,} tasks in {time.perf_counter() - started:.0f} s", flush=True)
        process = serve(path)
        try:
            result: dict[str, Any] = {"stored": args.stored, "page_load_ms": time_pages(args.runs)}
        finally:
            process.terminate()
            process.wait(60)
    result["machine"] = f"{os.cpu_count()} cores, Python {platform.python_version()}"
    print(json.dumps(result))


if __name__ == "__main__":
    main()
