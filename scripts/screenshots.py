"""Takes the README's screenshots of the dashboard: a real `tickwheel up` with some work
in every state, shot by headless Chromium.

    .venv/bin/python scripts/screenshots.py        # writes docs/screenshots/*.png
"""

from __future__ import annotations

import os
import subprocess
import sys
import tempfile
import textwrap
import time
from pathlib import Path
from typing import Any

import httpx
from playwright.sync_api import sync_playwright

ROOT = Path(__file__).resolve().parent.parent
OUT = ROOT / "docs" / "screenshots"
TICKWHEEL = str(Path(sys.executable).with_name("tickwheel"))
CHROMIUM = os.environ.get("TICKWHEEL_TEST_CHROMIUM", "/usr/bin/chromium")
PORT = 8792
BASE = f"http://127.0.0.1:{PORT}"
HANDLERS = """
import asyncio, random
from tickwheel import App, PermanentFailure

app = App()

@app.task("report", max_retries=2, retry_backoff=(0.2, 1.0))
async def report(ctx, payload):
    await asyncio.sleep(random.uniform(0.05, 0.6))
    if random.random() < 0.08:
        raise PermanentFailure("upstream returned 503")

@app.task("invoice")
async def invoice(ctx, payload):
    await asyncio.sleep(random.uniform(0.01, 0.2))
"""


def post(path: str, body: dict[str, Any]) -> Any:
    answer = httpx.post(f"{BASE}{path}", json=body, timeout=30)
    answer.raise_for_status()
    return answer.json()


def load_work() -> dict[str, str]:
    """Tasks in every state, a recurring schedule, a workflow; returns ids to show."""
    for _ in range(6):
        post(
            "/api/tasks/batch",
            {
                "tasks": [
                    {
                        "task_type": "report",
                        "payload": {"n": i},
                        "schedule": {"type": "delayed", "delay_seconds": i % 40 / 4},
                    }
                    for i in range(400)
                ]
            },
        )
        post("/api/tasks/batch", {"tasks": [{"task_type": "invoice", "queue": "billing"}] * 300})
        time.sleep(1)
    post(
        "/api/tasks",
        {
            "task_type": "report",
            "schedule": {"type": "cron", "cron_expression": "*/5 * * * *", "jitter_seconds": 30},
        },
    )
    post(
        "/api/tasks",
        {
            "task_type": "invoice",
            "schedule": {
                "type": "cron",
                "cron_expression": "0 2 * * *",
                "timezone": "Europe/Paris",
            },
        },
    )
    waiting = post(
        "/api/tasks",
        {"task_type": "report", "schedule": {"type": "delayed", "delay_seconds": 3600}},
    )
    workflow = post(
        "/api/workflows",
        {
            "name": "nightly-etl",
            "tasks": [
                {"name": "extract", "task_type": "invoice"},
                {"name": "clean", "task_type": "invoice", "dependencies": ["extract"]},
                {"name": "enrich", "task_type": "report", "dependencies": ["extract"]},
                {"name": "aggregate", "task_type": "report", "dependencies": ["clean", "enrich"]},
                {
                    "name": "publish",
                    "task_type": "invoice",
                    "dependencies": ["aggregate"],
                    "schedule": {"type": "delayed", "delay_seconds": 3600},
                },
            ],
        },
    )
    time.sleep(6)
    return {"task": waiting["task_id"], "workflow": workflow["workflow_id"]}


def main() -> None:
    OUT.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory() as folder:
        Path(folder, "shot_handlers.py").write_text(textwrap.dedent(HANDLERS))
        env = {**os.environ, "TICKWHEEL_LOG_LEVEL": "warning"}
        command = [
            TICKWHEEL,
            "up",
            "--port",
            str(PORT),
            "--app",
            "shot_handlers",
            "--database-url",
            f"sqlite:///{folder}/shots.db",
        ]
        server = subprocess.Popen(command, env=env, cwd=folder)
        try:
            for _ in range(100):
                try:
                    httpx.get(f"{BASE}/healthz")
                    break
                except httpx.HTTPError:
                    time.sleep(0.1)
            ids = load_work()
            shoot(ids)
        finally:
            server.terminate()
            server.wait(60)


def shoot(ids: dict[str, str]) -> None:
    pages = {
        "overview": ("/#/", "#counts .card"),
        "tasks": ("/#/tasks", "tr[data-task-id]"),
        "task": (f"/#/task/{ids['task']}", "dl.fields .status"),
        "workflow": (f"/#/workflow/{ids['workflow']}", "svg g.node"),
        "schedules": ("/#/schedules", "tr[data-schedule-id]"),
        "nodes": ("/#/nodes", "tr[data-node-id]"),
        "dead-letters": ("/#/dead", "tr[data-task-id]"),
    }
    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(
            executable_path=CHROMIUM,
            args=["--no-sandbox", "--disable-gpu", "--disable-background-networking"],
        )
        tab = browser.new_page(viewport={"width": 1280, "height": 820}, base_url=BASE)
        for name, (fragment, selector) in pages.items():
            tab.goto(fragment)
            tab.wait_for_selector(selector, timeout=20_000)
            tab.wait_for_timeout(1500)  # a stats event or two: charts drawn
            tab.screenshot(path=str(OUT / f"{name}.png"))
            print(f"docs/screenshots/{name}.png")
        browser.close()


if __name__ == "__main__":
    main()
