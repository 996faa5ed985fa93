"""A TCP proxy that adds a fixed delay each way, as a link between zones or regions
does: every chunk read from one side reaches the other `delay_ms` later, in order.

    .venv/bin/python -m bench.netdelay --to 127.0.0.1:5432 --delay-ms 10 [--port 15432]

Prints the port it listens on (`{"port": N}`) and forwards until killed. It stands
between Tickwheel's processes and a store; the store itself is not touched.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import sys
import time
from collections import deque


async def _carry(
    reader: asyncio.StreamReader, writer: asyncio.StreamWriter, delay_s: float
) -> None:
    """Forward `reader` to `writer`, each chunk `delay_s` after it arrived."""
    chunks: deque[tuple[float, bytes]] = deque()
    arrived = asyncio.Event()

    async def deliver() -> None:
        while True:
            while not chunks:
                arrived.clear()
                await arrived.wait()
            due, data = chunks.popleft()
            if not data:
                writer.close()
                return
            wait = due - time.monotonic()
            if wait > 0:
                await asyncio.sleep(wait)
            writer.write(data)
            await writer.drain()

    delivering = asyncio.create_task(deliver())
    try:
        while True:
            data = await reader.read(65536)
            chunks.append((time.monotonic() + delay_s, data))
            arrived.set()
            if not data:
                break
        await delivering
    except (ConnectionError, OSError):
        delivering.cancel()
        writer.close()


async def serve(upstream: tuple[str, int], delay_ms: float, port: int = 0) -> asyncio.Server:
    delay_s = delay_ms / 1000

    async def connected(client_r: asyncio.StreamReader, client_w: asyncio.StreamWriter) -> None:
        try:
            server_r, server_w = await asyncio.open_connection(*upstream)
        except OSError:
            client_w.close()
            return
        await asyncio.gather(
            _carry(client_r, server_w, delay_s),
            _carry(server_r, client_w, delay_s),
            return_exceptions=True,
        )

    return await asyncio.start_server(connected, "127.0.0.1", port)


async def _main(args: argparse.Namespace) -> None:
    host, _, port = args.to.rpartition(":")
    server = await serve((host, int(port)), args.delay_ms, args.port)
    print(json.dumps({"port": server.sockets[0].getsockname()[1]}), flush=True)
    async with server:
        await server.serve_forever()


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--to", required=True, help="HOST:PORT of the service")
    parser.add_argument("--delay-ms", type=float, required=True, help="added each way")
    parser.add_argument("--port", type=int, default=0)
    with contextlib.suppress(KeyboardInterrupt):
        asyncio.run(_main(parser.parse_args(sys.argv[1:])))
