"""Submission throughput of a real `tickwheel up`: single-task HTTP and batch HTTP.

    .venv/bin/python bench/submit.py --single 3000 --batches 10 --runs 3

Tasks are due an hour ahead so the measurement is acceptance (validated, committed,
acknowledged), not execution. The client uses aiohttp with keep-alive connections.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import time

import aiohttp
from live import report, tickwheel_up

TASK = {
    "task_type": "noop",
    "payload": {"order": 42},
    "schedule": {"type": "delayed", "delay_seconds": 3600},
}


async def single(url: str, count: int, concurrency: int) -> float:
    async with aiohttp.ClientSession(connector=aiohttp.TCPConnector(limit=concurrency)) as http:
        left = iter(range(count))

        async def client() -> None:
            for _ in left:
                async with http.post(f"{url}/api/tasks", json=TASK) as response:
                    assert response.status == 201, await response.text()
                    await response.read()

        started = time.perf_counter()
        await asyncio.gather(*(client() for _ in range(concurrency)))
        return count / (time.perf_counter() - started)


async def batches(url: str, count: int, size: int) -> float:
    body = json.dumps({"tasks": [TASK] * size}).encode()
    headers = {"content-type": "application/json"}
    async with aiohttp.ClientSession() as http:
        started = time.perf_counter()
        for _ in range(count):
            async with http.post(f"{url}/api/tasks/batch", data=body, headers=headers) as response:
                assert response.status == 201, await response.text()
                await response.read()
        return count * size / (time.perf_counter() - started)


def one_run(args: argparse.Namespace) -> dict[str, float]:
    with tickwheel_up() as url:
        return {
            "single_tasks_per_s": round(asyncio.run(single(url, args.single, args.concurrency))),
            "batch_tasks_per_s": round(asyncio.run(batches(url, args.batches, args.batch_size))),
        }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--single", type=int, default=3000)
    parser.add_argument("--concurrency", type=int, default=32)
    parser.add_argument("--batches", type=int, default=10)
    parser.add_argument("--batch-size", type=int, default=10_000)
    parser.add_argument("--runs", type=int, default=3)
    args = parser.parse_args()
    report("submit", args.runs, lambda: one_run(args))


if __name__ == "__main__":
    main()
