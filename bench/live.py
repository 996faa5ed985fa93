"""What the benchmarks against a real `tickwheel up` share: the server and the report."""

from __future__ import annotations

import json
import os
import socket
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@contextmanager
def tickwheel_up(*args: str) -> Iterator[str]:
    """`tickwheel up` on a fresh SQLite file and a free port; yields its URL."""
    folder = Path(tempfile.mkdtemp(prefix="tickwheel-bench-"))
    port = free_port()
    env = {**os.environ, "TICKWHEEL_PORT": str(port), "TICKWHEEL_LOG_LEVEL": "warning"}
    env["TICKWHEEL_DATABASE_URL"] = f"sqlite:///{folder / 'bench.db'}"
    tickwheel = str(Path(sys.executable).with_name("tickwheel"))
    process = subprocess.Popen([tickwheel, "up", *args], env=env, stdout=subprocess.DEVNULL)
    try:
        for _ in range(400):
            try:
                socket.create_connection(("127.0.0.1", port), timeout=0.2).close()
                break
            except OSError:
                time.sleep(0.05)
        yield f"http://127.0.0.1:{port}"
    finally:
        process.terminate()
        process.wait(30)


def report(scenario: str, runs: int, one_run: Callable[[], dict[str, float]]) -> None:
    """Print each run as a JSON line, then the medians."""
    results = [one_run() for _ in range(runs)]
    for result in results:
        print(json.dumps(result))
    summary = {key: statistics.median(r[key] for r in results) for key in results[0]}
    print(json.dumps({"scenario": scenario, "median_of_runs": summary}))
