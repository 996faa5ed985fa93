"""Worker protocol throughput of a real `tickwheel up --no-worker`: claims and completions
over HTTP, the way a worker in another language would run.

    .venv/bin/python -m bench.worker_protocol --tasks 20000 --workers 8 --runs 3

N immediate tasks are submitted in batches; then W concurrent HTTP workers claim up to
256 tasks per call and complete each one. Prints claimed tasks/s (claim calls only) and
completed tasks/s (claim + one complete call per task).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import time

import aiohttp

from bench.live import report, tickwheel_up

HEADERS = {"content-type": "application/json"}


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
    with tickwheel_up("--no-worker") as url:
        claims, completions = asyncio.run(run_workers(url, args.tasks, args.workers))
        return {"claimed_tasks_per_s": round(claims), "completed_tasks_per_s": round(completions)}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--tasks", type=int, default=20_000)
    parser.add_argument("--workers", type=int, default=8)
    parser.add_argument("--runs", type=int, default=3)
    args = parser.parse_args()
    report("worker_protocol", args.runs, lambda: one_run(args))


if __name__ == "__main__":
    main()
