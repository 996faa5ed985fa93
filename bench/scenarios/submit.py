"""submit: how fast Tickwheel accepts tasks (validated, committed, acknowledged), over
single-task HTTP, batch HTTP, and the Python SDK (`tickwheel.AsyncClient`) both ways.

Tasks are due an hour ahead, so what is measured is acceptance, not execution. Raw HTTP
uses keep-alive connections and sends bare tasks; the SDK names every task with an id
of its own (a UUIDv7, the dedupe of a retry), as it always does, so the difference is
the price of safe retries.
"""

from __future__ import annotations

import asyncio
import json
import time
from collections.abc import Awaitable, Callable
from typing import Any

import aiohttp

from bench.progress import steps
from bench.stores import Mode, labels
from bench.targets import running
from tickwheel import AsyncClient
from tickwheel.client import task_body

TASK: dict[str, Any] = {
    "task_type": "noop",
    "payload": {"order": 42},
    "schedule": {"type": "delayed", "delay_seconds": 3600},
}


async def run(
    mode: Mode, single: int = 3_000, batches: int = 10, batch_size: int = 10_000, senders: int = 32
) -> dict[str, Any]:
    async with running(mode, concurrency=64) as target:
        url = target.url
        return labels(mode, "submit") | {
            "single_http_per_s": await _rate(single, lambda: _single_http(url, single, senders)),
            "batch_http_per_s": await _rate(
                batches * batch_size, lambda: _batch_http(url, batches, batch_size)
            ),
            "sdk_single_per_s": await _rate(single, lambda: _sdk_single(url, single, senders)),
            "sdk_batch_per_s": await _rate(
                batches * batch_size, lambda: _sdk_batches(url, batches, batch_size)
            ),
        }


async def _rate(count: int, work: Callable[[], Awaitable[None]]) -> int:
    began = time.perf_counter()
    await work()
    return round(count / (time.perf_counter() - began))


async def _concurrently(count: int, senders: int, send: Callable[[], Awaitable[None]]) -> None:
    """`count` calls of `send`, `senders` at a time, with a progress bar."""
    left = iter(range(count))
    with steps(f"submitting {count:,} one by one", count) as done:

        async def sender() -> None:
            for i in left:
                await send()
                done(i + 1)

        await asyncio.gather(*(sender() for _ in range(senders)))


# Raw HTTP goes through aiohttp: httpx's async pool costs far more CPU per request at
# 32 connections, and the client shares the cores with the server here.
async def _single_http(url: str, count: int, senders: int) -> None:
    connector = aiohttp.TCPConnector(limit=senders)
    async with aiohttp.ClientSession(url, connector=connector) as http:

        async def send() -> None:
            async with http.post("/api/tasks", json=TASK) as answer:
                answer.raise_for_status()
                await answer.read()

        await _concurrently(count, senders, send)


async def _batch_http(url: str, count: int, size: int) -> None:
    body = json.dumps({"tasks": [TASK] * size}).encode()
    headers = {"content-type": "application/json"}
    timeout = aiohttp.ClientTimeout(total=300)
    async with aiohttp.ClientSession(url, headers=headers, timeout=timeout) as http:
        with steps(f"submitting {count} batches of {size:,}", count) as done:
            for i in range(count):
                async with http.post("/api/tasks/batch", data=body) as answer:
                    answer.raise_for_status()
                    await answer.read()
                done(i + 1)


async def _sdk_single(url: str, count: int, senders: int) -> None:
    async with AsyncClient(url) as client:  # opens a connection per sender in flight

        async def send() -> None:
            await client.submit("noop", {"order": 42}, delay_seconds=3600)

        await _concurrently(count, senders, send)


async def _sdk_batches(url: str, count: int, size: int) -> None:
    async with AsyncClient(url, timeout_seconds=300) as client:
        with steps(f"submitting {count} batches of {size:,} (SDK)", count) as done:
            for i in range(count):
                bodies = [task_body("noop", {"order": 42}, delay_seconds=3600)] * size
                await client.submit_many(bodies)
                done(i + 1)
