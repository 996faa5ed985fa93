"""Submission throughput of a real `tickwheel up`: single-task HTTP and batch HTTP, raw
and through the Python client (`tickwheel.AsyncClient`).

    .venv/bin/python bench/submit.py --single 3000 --batches 10 --runs 3

Tasks are due an hour ahead so the measurement is acceptance (validated, committed,
acknowledged), not execution. The raw figures use aiohttp with keep-alive connections
and no idempotency keys; the client sends a key with every task, as it always does, so
the difference is the price of safe retries (plus the client's own overhead).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import time

import aiohttp
import httpx
from live import report, tickwheel_up

from tickwheel import AsyncClient
from tickwheel.client import task_body

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


async def client_single(url: str, count: int, concurrency: int) -> float:
    limits = httpx.Limits(max_connections=concurrency)
    async with AsyncClient(url, transport=httpx.AsyncHTTPTransport(limits=limits)) as client:
        left = iter(range(count))

        async def submitter() -> None:
            for _ in left:
                await client.submit("noop", {"order": 42}, delay_seconds=3600)

        started = time.perf_counter()
        await asyncio.gather(*(submitter() for _ in range(concurrency)))
        return count / (time.perf_counter() - started)


async def client_batches(url: str, count: int, size: int) -> float:
    async with AsyncClient(url, timeout_seconds=120) as client:
        started = time.perf_counter()
        for _ in range(count):
            bodies = [task_body("noop", {"order": 42}, delay_seconds=3600)] * size
            await client.submit_many(bodies)
        return count * size / (time.perf_counter() - started)


def one_run(args: argparse.Namespace) -> dict[str, float]:
    with tickwheel_up() as url:
        return {
            "single_tasks_per_s": round(asyncio.run(single(url, args.single, args.concurrency))),
            "batch_tasks_per_s": round(asyncio.run(batches(url, args.batches, args.batch_size))),
            "client_single_tasks_per_s": round(
                asyncio.run(client_single(url, args.single, args.concurrency))
            ),
            "client_batch_tasks_per_s": round(
                asyncio.run(client_batches(url, args.batches, args.batch_size))
            ),
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
