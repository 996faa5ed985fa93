"""How long `tickwheel ls` takes from start to exit against a live server: the start
time of a command that talks to a server (issue 16 asks for under 300 ms).

    .venv/bin/python -m bench.cli_start --runs 30
    .venv/bin/python -m bench.cli_start --url http://127.0.0.1:8700 --also OTHER/bin/tickwheel

Starts `tickwheel up` on a fresh file (or uses `--url`), submits a few tasks, then runs
`tickwheel ls --url URL` (its output piped, so JSON) in fresh processes, alternating with
a bare `python -c pass` and any `--also` executable, so that a busy machine slows each
alike. Prints the median and p90 wall time and the median CPU time (the steadier figure
on shared cores) of each, then one JSON object.
"""

from __future__ import annotations

import argparse
import json
import resource
import statistics
import subprocess
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from bench.live import tickwheel_up
from tickwheel import Client

TICKWHEEL = str(Path(sys.executable).with_name("tickwheel"))


def timed(command: list[str]) -> tuple[float, float]:
    """Wall and CPU seconds of one run of `command` (which must succeed)."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    start = time.perf_counter()
    subprocess.run(command, check=True, stdout=subprocess.DEVNULL)
    wall = time.perf_counter() - start
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    return wall, after.ru_utime - before.ru_utime + after.ru_stime - before.ru_stime


def summary(samples: list[tuple[float, float]]) -> dict[str, float]:
    walls = sorted(wall for wall, _ in samples)
    return {
        "median_ms": round(statistics.median(walls) * 1000, 1),
        "p90_ms": round(walls[int(0.9 * (len(walls) - 1))] * 1000, 1),
        "cpu_median_ms": round(statistics.median(cpu for _, cpu in samples) * 1000, 1),
    }


@contextmanager
def server(url: str | None) -> Iterator[str]:
    if url is not None:
        yield url
        return
    with tickwheel_up() as started:
        with Client(started) as client:
            for i in range(20):
                client.submit("noop", {"i": i}, delay_seconds=3600)
        yield started


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--runs", type=int, default=30, help="fresh processes of each")
    parser.add_argument("--url", help="a running server (default: start `tickwheel up`)")
    parser.add_argument(
        "--also", action="append", default=[], help="another `tickwheel` to time alike"
    )
    options = parser.parse_args()
    with server(options.url) as url:
        commands = {
            "python -c pass": [sys.executable, "-c", "pass"],
            "tickwheel --version": [TICKWHEEL, "--version"],
            "tickwheel ls": [TICKWHEEL, "ls", "--url", url],
            **{f"{other} ls": [other, "ls", "--url", url] for other in options.also},
        }
        for command in commands.values():  # warm the file cache
            timed(command)
        samples: dict[str, list[tuple[float, float]]] = {name: [] for name in commands}
        for _ in range(options.runs):
            for name, command in commands.items():
                samples[name].append(timed(command))
    result = {name: summary(found) for name, found in samples.items()}
    for name, figures in result.items():
        print(
            f"{name:<40} median {figures['median_ms']:7.1f} ms  p90 {figures['p90_ms']:7.1f} ms"
            f"  cpu {figures['cpu_median_ms']:7.1f} ms"
        )
    print(json.dumps({"runs": options.runs, **result}))


if __name__ == "__main__":
    main()
