"""HTTP burst: N `http` tasks due at the same instant, through a real `tickwheel up`.

    .venv/bin/python -m bench.http_burst --tasks 300 --runs 3

Submits the tasks over the API, then measures, per task, the trigger lateness
(`triggered_at - due_time` from the API) and the arrival lateness at the target HTTP
server. Prints percentiles per run, the median over runs, and a JSON line.
"""

from __future__ import annotations

import argparse
import asyncio
import threading
import time
from collections.abc import Callable
from datetime import UTC, datetime, timedelta

import httpx
from aiohttp import web

from bench.live import report, tickwheel_up


def percentile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))]


def start_target() -> tuple[Callable[[], None], int, dict[str, float]]:
    """An asyncio HTTP server on its own thread that records when each task's call arrived.

    A threaded server spends a thread per connection and would measure itself, not the
    scheduler."""
    arrivals: dict[str, float] = {}
    loop = asyncio.new_event_loop()
    ready = threading.Event()
    holder: dict[str, object] = {}

    async def hook(request: web.Request) -> web.Response:
        arrivals.setdefault(request.headers["X-Tickwheel-Task-Id"], time.time())
        await request.read()
        return web.Response(status=204)

    async def serve() -> None:
        app = web.Application()
        app.router.add_post("/hook", hook)
        runner = web.AppRunner(app, access_log=None)
        await runner.setup()
        site = web.TCPSite(runner, "127.0.0.1", 0, backlog=2048)
        await site.start()
        holder["runner"] = runner
        holder["port"] = runner.addresses[0][1]
        ready.set()

    threading.Thread(target=loop.run_forever, daemon=True).start()
    asyncio.run_coroutine_threadsafe(serve(), loop)
    ready.wait(10)

    def stop() -> None:
        runner = holder["runner"]
        assert isinstance(runner, web.AppRunner)
        asyncio.run_coroutine_threadsafe(runner.cleanup(), loop).result(10)
        loop.call_soon_threadsafe(loop.stop)

    port = holder["port"]
    assert isinstance(port, int)
    return stop, port, arrivals


def one_run(tasks: int, lead: float) -> dict[str, float]:
    stop_target, target_port, arrivals = start_target()
    target = f"http://127.0.0.1:{target_port}/hook"
    try:
        with tickwheel_up() as url, httpx.Client(base_url=url, timeout=30) as api:
            due = datetime.now(UTC).replace(microsecond=0) + timedelta(seconds=lead)
            body = {
                "task_type": "http",
                "payload": {"url": target},
                "schedule": {"type": "delayed", "due_time": due.isoformat()},
            }
            ids = [api.post("/api/tasks", json=body).json()["task_id"] for _ in range(tasks)]
            if datetime.now(UTC) > due:
                raise SystemExit("submission outran the lead time: raise --lead-seconds")
            deadline = time.time() + lead + 30
            while len(arrivals) < tasks and time.time() < deadline:
                time.sleep(0.05)
            time.sleep(0.5)
            triggered = [
                datetime.fromisoformat(api.get(f"/api/tasks/{i}").json()["triggered_at"])
                for i in ids
            ]
    finally:
        stop_target()
    trigger_ms = [(t - due).total_seconds() * 1000 for t in triggered]
    arrival_ms = [(at - due.timestamp()) * 1000 for at in arrivals.values()]
    return {
        "fired": len(arrivals),
        "early": sum(1 for x in arrival_ms + trigger_ms if x < 0),
        "trigger_p50_ms": round(percentile(trigger_ms, 0.5), 1),
        "trigger_p99_ms": round(percentile(trigger_ms, 0.99), 1),
        "arrival_p50_ms": round(percentile(arrival_ms, 0.5), 1),
        "arrival_p99_ms": round(percentile(arrival_ms, 0.99), 1),
        "arrival_max_ms": round(max(arrival_ms), 1),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--tasks", type=int, default=300)
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--lead-seconds", type=float, default=4.0)
    args = parser.parse_args()
    report("http_burst", args.runs, lambda: one_run(args.tasks, args.lead_seconds))


if __name__ == "__main__":
    main()
