"""Admission control in a real `tickwheel up`, with its default limits: a burst far
beyond what the workers drain at once is taken, and a pool that truly cannot keep up
is protected by 429 with a Retry-After that holds."""

from __future__ import annotations

import textwrap
import time
from pathlib import Path

import httpx
import pytest
from harness import Tickwheel

NOOPS = {"tasks": [{"task_type": "noop"}] * 1000}

SLOW_HANDLERS = """
import asyncio

from tickwheel import App

app = App()


@app.task("slow")
async def slow(ctx, payload):
    await asyncio.sleep(0.25)
"""


@pytest.mark.slow
def test_a_fresh_server_takes_100_batches_of_1000_back_to_back(tickwheel_factory: type) -> None:
    """Issue 13: one task, 3 s idle, then batches back to back; the third used to be
    refused, the drain rate having decayed towards zero while nothing waited."""
    tw: Tickwheel = tickwheel_factory.start()
    with httpx.Client(base_url=tw.url, timeout=60) as http:
        assert http.post("/api/tasks", json={"task_type": "noop"}).status_code == 201
        time.sleep(3)
        answers = [http.post("/api/tasks/batch", json=NOOPS) for _ in range(100)]
        refused = [(i, a.text) for i, a in enumerate(answers) if a.status_code != 201]
        assert refused == []
        assert http.get("/api/queues").json()["admitting"] is True


@pytest.mark.slow
def test_workers_that_cannot_keep_up_are_protected_by_429(
    tickwheel_factory: type, tmp_path: Path
) -> None:
    """8 tasks a second (2 at a time, 0.25 s each) and at most 3 s of backlog: once the
    rate is measured, a backlog beyond 24 is refused until it has drained."""
    (tmp_path / "slow_handlers.py").write_text(textwrap.dedent(SLOW_HANDLERS))
    tw: Tickwheel = tickwheel_factory.start(
        app="slow_handlers",
        extra_env={"TICKWHEEL_CONCURRENCY": "2", "TICKWHEEL_MAX_DRAIN_SECONDS": "3"},
    )
    batch = {"tasks": [{"task_type": "slow"}] * 40}
    with httpx.Client(base_url=tw.url, timeout=30) as http:
        assert http.post("/api/tasks/batch", json=batch).status_code == 201  # cold: by depth
        deadline = time.monotonic() + 20
        while (queues := http.get("/api/queues").json())["drain_per_second"] == 0:
            assert time.monotonic() < deadline, queues
            time.sleep(0.1)
        assert 4 <= queues["drain_per_second"] <= 16, queues
        answers = [http.post("/api/tasks/batch", json=batch) for _ in range(3)]
        codes = [a.status_code for a in answers]
        assert 429 in codes, (codes, http.get("/api/queues").json())
        refused = answers[codes.index(429)]
        retry_after = int(refused.headers["Retry-After"])
        assert 1 <= retry_after <= 15, refused.text
        assert http.get("/api/queues").json()["admitting"] is False  # reads still answer
        time.sleep(retry_after)
        again = http.post("/api/tasks", json={"task_type": "slow"})
        assert again.status_code == 201, (again.text, http.get("/api/queues").json())
