"""Worker protocol throughput of a real `tickwheel up --no-worker`: claims and completions
over HTTP, the way a worker in another language would run.

    .venv/bin/python bench/worker_protocol.py --tasks 20000 --workers 8 --runs 3

N immediate tasks are submitted in batches; then W concurrent HTTP workers claim up to
256 tasks per call and complete each one. Prints claimed tasks/s (claim calls only) and
completed tasks/s (claim + one complete call per task).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import socket
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import aiohttp

HEADERS = {"content-type": "application/json"}


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


async def run_workers(url: str, tasks: int, workers: int) -> tuple[float, float]:
    async with aiohttp.ClientSession(connector=aiohttp.TCPConnector(limit=64)) as http:
        body = json.dumps({"tasks": [{"task_type": "noop"}] * 10_000}).encode()
        for _ in range(tasks // 10_000):
            async with http.post(f"{url}/api/tasks/batch", data=body, headers=HEADERS) as r:
                assert r.status == 201, await r.text()
        await asyncio.sleep(1.5)  # let the loader put them on the ready queue
        claimed = completed = 0
        claim_seconds = 0.0

        async def worker(name: str) -> None:
            nonlocal claimed, completed, claim_seconds
            request = {"worker_id": name, "max_tasks": 256, "wait_seconds": 1}
            while completed + claimed < 2 * tasks:
                started = time.perf_counter()
                async with http.post(f"{url}/api/worker/claim", json=request) as r:
                    batch = (await r.json())["tasks"]
                claim_seconds += time.perf_counter() - started
                if not batch:
                    return
                claimed += len(batch)
                for task in batch:
                    path = f"{url}/api/worker/tasks/{task['task_id']}/complete"
                    async with http.post(path, json={"fence": task["fence"]}) as r:
                        assert r.status == 200, await r.text()
                        completed += 1

        started = time.perf_counter()
        await asyncio.gather(*(worker(f"w{i}") for i in range(workers)))
        elapsed = time.perf_counter() - started
        assert completed == tasks, completed
        return claimed / claim_seconds * workers, completed / elapsed


def one_run(args: argparse.Namespace) -> dict[str, float]:
    folder = Path(tempfile.mkdtemp(prefix="tickwheel-wp-"))
    port = free_port()
    env = {**os.environ, "TICKWHEEL_PORT": str(port), "TICKWHEEL_LOG_LEVEL": "warning"}
    env["TICKWHEEL_DATABASE_URL"] = f"sqlite:///{folder / 'bench.db'}"
    tickwheel = str(Path(sys.executable).with_name("tickwheel"))
    process = subprocess.Popen([tickwheel, "up", "--no-worker"], env=env, stdout=subprocess.DEVNULL)
    try:
        for _ in range(200):
            try:
                socket.create_connection(("127.0.0.1", port), timeout=0.2).close()
                break
            except OSError:
                time.sleep(0.05)
        claims, completions = asyncio.run(
            run_workers(f"http://127.0.0.1:{port}", args.tasks, args.workers)
        )
        return {"claimed_tasks_per_s": round(claims), "completed_tasks_per_s": round(completions)}
    finally:
        process.terminate()
        process.wait(30)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--tasks", type=int, default=20_000)
    parser.add_argument("--workers", type=int, default=8)
    parser.add_argument("--runs", type=int, default=3)
    args = parser.parse_args()
    runs = [one_run(args) for _ in range(args.runs)]
    for run in runs:
        print(json.dumps(run))
    summary = {key: statistics.median(r[key] for r in runs) for key in runs[0]}
    print(json.dumps({"scenario": "worker_protocol", "median_of_runs": summary}))


if __name__ == "__main__":
    main()
