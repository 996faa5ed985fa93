"""The client against the wire: `Client.submit` and `AsyncClient.submit` beside the same
`POST /api/tasks` sent raw, one at a time, through a real `tickwheel up`; and how long
`import tickwheel` takes a program that only uses the client.

    .venv/bin/python -m bench.client_latency --calls 2000 --imports 30

The raw sender is the floor: the body the client would send (same bytes shape, a fresh
key each time), written on one kept-alive connection (`http.client`, and asyncio streams
for the async side). Raw and client calls alternate in rounds, so a busy machine slows
both alike. `--transports` adds the bare HTTP libraries the client could sit on, with
no Tickwheel code, to choose one by measurement. Prints one JSON object.
"""

from __future__ import annotations

import argparse
import asyncio
import http.client
import json
import os
import resource
import statistics
import subprocess
import sys
import time
from collections.abc import Awaitable, Callable, Mapping
from typing import Any
from urllib.parse import urlsplit

from bench.live import tickwheel_up
from tickwheel import AsyncClient, Client
from tickwheel.client import calls

HEADERS = {"Content-Type": "application/json", "User-Agent": "bench"}
ROUND = 50  # calls of one sender before the next sender's turn


def raw_body() -> bytes:
    """What `Client.submit("noop")` puts on the wire, with a key of its own."""
    return json.dumps(calls.submit(calls.task_body("noop")).json, separators=(",", ":")).encode()


def figures(samples: list[float], cpu_seconds: float) -> dict[str, float]:
    """Wall-time percentiles, and this process's CPU per call (the sender's own work,
    the server's excluded: steadier than wall time on a busy machine)."""
    ordered = sorted(samples)
    return {
        "p50_ms": round(statistics.median(ordered) * 1000, 3),
        "p99_ms": round(ordered[int(0.99 * (len(ordered) - 1))] * 1000, 3),
        "cpu_per_call_us": round(cpu_seconds / len(samples) * 1e6, 1),
    }


# -- blocking senders --------------------------------------------------------


def http_client_sender(url: str) -> Callable[[], None]:
    parts = urlsplit(url)
    connection = http.client.HTTPConnection(parts.hostname or "", parts.port)

    def send() -> None:
        connection.request("POST", "/api/tasks", raw_body(), HEADERS)
        answer = connection.getresponse()
        answer.read()
        assert answer.status in (200, 201), answer.status

    return send


def client_sender(url: str) -> Callable[[], None]:
    client = Client(url)

    def send() -> None:
        client.submit("noop")

    return send


def httpx_sender(url: str) -> Callable[[], None]:
    import httpx

    http = httpx.Client(base_url=url)

    def send() -> None:
        http.post("/api/tasks", content=raw_body(), headers=HEADERS).raise_for_status()

    return send


def urllib3_sender(url: str) -> Callable[[], None]:
    import urllib3

    pool = urllib3.connection_from_url(url, maxsize=1)

    def send() -> None:
        answer = pool.request("POST", "/api/tasks", body=raw_body(), headers=HEADERS)
        assert answer.status in (200, 201), answer.status

    return send


def blocking(senders: dict[str, Callable[[], None]], count: int) -> dict[str, Any]:
    samples: dict[str, list[float]] = {name: [] for name in senders}
    cpu = dict.fromkeys(senders, 0.0)
    for send in senders.values():  # warm up: connections made, code paths hot
        for _ in range(ROUND):
            send()
    for _ in range(count // ROUND):
        for name, send in senders.items():
            cpu_start = time.process_time()
            for _ in range(ROUND):
                start = time.perf_counter()
                send()
                samples[name].append(time.perf_counter() - start)
            cpu[name] += time.process_time() - cpu_start
    return {name: figures(values, cpu[name]) for name, values in samples.items()}


# -- asyncio senders ---------------------------------------------------------


async def streams_sender(url: str) -> Callable[[], Awaitable[None]]:
    """HTTP/1.1 written by hand on one asyncio connection: the floor for asyncio."""
    parts = urlsplit(url)
    reader, writer = await asyncio.open_connection(parts.hostname, parts.port)
    head = f"POST /api/tasks HTTP/1.1\r\nHost: {parts.netloc}\r\n" + "".join(
        f"{k}: {v}\r\n" for k, v in HEADERS.items()
    )

    async def send() -> None:
        body = raw_body()
        writer.write(f"{head}Content-Length: {len(body)}\r\n\r\n".encode() + body)
        lines = (await reader.readuntil(b"\r\n\r\n")).split(b"\r\n")
        assert lines[0].split()[1] in (b"200", b"201"), lines[0]
        length = next(
            int(v)
            for k, _, v in (x.partition(b":") for x in lines)
            if k.lower() == b"content-length"
        )
        await reader.readexactly(length)

    return send


CLOSING: list[Callable[[], Awaitable[None]]] = []  # what the asyncio senders opened


async def async_client_sender(url: str) -> Callable[[], Awaitable[None]]:
    client = AsyncClient(url)
    CLOSING.append(client.close)

    async def send() -> None:
        await client.submit("noop")

    return send


async def httpx_async_sender(url: str) -> Callable[[], Awaitable[None]]:
    import httpx

    http = httpx.AsyncClient(base_url=url)
    CLOSING.append(http.aclose)

    async def send() -> None:
        (await http.post("/api/tasks", content=raw_body(), headers=HEADERS)).raise_for_status()

    return send


async def aiohttp_sender(url: str) -> Callable[[], Awaitable[None]]:
    import aiohttp

    session = aiohttp.ClientSession(url)
    CLOSING.append(session.close)

    async def send() -> None:
        async with session.post("/api/tasks", data=raw_body(), headers=HEADERS) as answer:
            await answer.read()
            answer.raise_for_status()

    return send


async def asynchronous(
    makers: Mapping[str, Callable[[str], Awaitable[Callable[[], Awaitable[None]]]]],
    url: str,
    count: int,
) -> dict[str, Any]:
    senders = {name: await make(url) for name, make in makers.items()}
    samples: dict[str, list[float]] = {name: [] for name in senders}
    cpu = dict.fromkeys(senders, 0.0)
    for send in senders.values():
        for _ in range(ROUND):
            await send()
    for _ in range(count // ROUND):
        for name, send in senders.items():
            cpu_start = time.process_time()
            for _ in range(ROUND):
                start = time.perf_counter()
                await send()
                samples[name].append(time.perf_counter() - start)
            cpu[name] += time.process_time() - cpu_start
    for close in CLOSING:
        await close()
    return {name: figures(values, cpu[name]) for name, values in samples.items()}


# -- import time -------------------------------------------------------------


def import_seconds(code: str, runs: int) -> tuple[float, float]:
    """The median wall time of a fresh interpreter running `code`, and the median CPU
    time it used (steadier when other programs share the cores)."""
    walls, cpus = [], []
    for _ in range(runs):
        before = resource.getrusage(resource.RUSAGE_CHILDREN)
        start = time.perf_counter()
        subprocess.run([sys.executable, "-c", code], check=True, env=os.environ)
        walls.append(time.perf_counter() - start)
        after = resource.getrusage(resource.RUSAGE_CHILDREN)
        cpus.append(after.ru_utime - before.ru_utime + after.ru_stime - before.ru_stime)
    return statistics.median(walls), statistics.median(cpus)


def imports(runs: int) -> dict[str, float]:
    bare, bare_cpu = import_seconds("pass", runs)
    client, client_cpu = import_seconds("import tickwheel; tickwheel.Client", runs)
    return {
        "python_alone_ms": round(bare * 1000, 1),
        "import_for_client_ms": round(client * 1000, 1),
        "import_for_client_minus_python_ms": round((client - bare) * 1000, 1),
        "python_alone_cpu_ms": round(bare_cpu * 1000, 1),
        "import_for_client_cpu_ms": round(client_cpu * 1000, 1),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--calls", type=int, default=2000, help="per sender")
    parser.add_argument("--imports", type=int, default=20, help="fresh interpreters timed")
    parser.add_argument("--transports", action="store_true", help="bare HTTP libraries too")
    options = parser.parse_args()
    # Admission must not shed a benchmark's load: it measures the client, not the limits.
    os.environ |= {"TICKWHEEL_MAX_READY_DEPTH": "100000000", "TICKWHEEL_MAX_DRAIN_SECONDS": "1e5"}
    result: dict[str, Any] = {"imports": imports(options.imports)}
    with tickwheel_up() as url:
        time.sleep(1.0)  # until it serves
        sync_senders = {"raw": http_client_sender(url), "client": client_sender(url)}
        async_makers = {"raw": streams_sender, "client": async_client_sender}
        if options.transports:
            sync_senders |= {"httpx": httpx_sender(url), "urllib3": urllib3_sender(url)}
            async_makers |= {"httpx": httpx_async_sender, "aiohttp": aiohttp_sender}
        result["sync"] = blocking(sync_senders, options.calls)
        result["async"] = asyncio.run(asynchronous(async_makers, url, options.calls))
    for side in ("sync", "async"):
        floor = result[side]["raw"]["p50_ms"]
        result[side]["client_over_raw_p50_ms"] = round(result[side]["client"]["p50_ms"] - floor, 3)
    print(json.dumps(result, indent=2))


if __name__ == "__main__":
    main()
