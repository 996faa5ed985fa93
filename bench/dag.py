"""DAG: a random graph of N tasks (default 10,000) submitted as one workflow through the
embedded engine (SQLite, in-process queue and worker). Prints the unblock latency: for
each task that waits on others, its start (claim) minus the completion of its last
predecessor, p50/p99/max, and the time the whole graph took.

    .venv/bin/python bench/dag.py --tasks 10000 --runs 3

The graph: task i waits on 1 to 3 tasks drawn from the 200 before it (5% wait on none),
so it is both wide and a few hundred levels deep. The last line is the result as JSON.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import platform
import random
import statistics
import tempfile
import time
from pathlib import Path
from typing import Any

import uvloop

from tickwheel import Workflow
from tickwheel.config import Settings
from tickwheel.engine.node import Node

WINDOW = 200


def percentile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))]


def random_graph(tasks: int, seed: int) -> list[list[int]]:
    """For each task, the earlier tasks it waits on."""
    rng = random.Random(seed)
    graph: list[list[int]] = [[]]
    for i in range(1, tasks):
        if rng.random() < 0.05:
            graph.append([])
            continue
        window = range(max(0, i - WINDOW), i)
        graph.append(rng.sample(window, min(len(window), rng.choice((1, 1, 2, 2, 3)))))
    return graph


def depth_of(graph: list[list[int]]) -> int:
    level = [0] * len(graph)
    for i, predecessors in enumerate(graph):
        level[i] = 1 + max((level[p] for p in predecessors), default=0)
    return max(level)


async def run(tasks: int, concurrency: int, seed: int) -> dict[str, Any]:
    folder = Path(tempfile.mkdtemp(prefix="tickwheel-bench-"))
    settings = Settings(
        database_url=f"sqlite:///{folder / 'dag.db'}", concurrency=concurrency, lease_seconds=60
    )
    graph = random_graph(tasks, seed)
    flow = Workflow("bench-dag")
    for i, predecessors in enumerate(graph):
        flow.task(f"t{i}", "noop", after=[f"t{p}" for p in predecessors])

    async with Node(settings=settings) as node:
        started = time.perf_counter()
        view = await node.submit_workflow(flow)
        submitted = time.perf_counter()
        workflow_id = view.record.workflow_id
        while node.worker.completed < tasks:
            await asyncio.sleep(0.01)
        finished = time.perf_counter()
        found = await node.store.get_workflow(workflow_id)
    assert found is not None
    _, records, _ = found
    by_name = {r.node_name: r for r in records}
    assert all(r.status == "succeeded" for r in records), "every task must succeed"
    latency: list[float] = []
    for i, predecessors in enumerate(graph):
        if not predecessors:
            continue
        mine = by_name[f"t{i}"]
        last_done = max(by_name[f"t{p}"].completed_ms or 0 for p in predecessors)
        assert mine.started_ms is not None and mine.started_ms >= last_done, "ran too soon"
        latency.append(mine.started_ms - last_done)
    return {
        "scenario": "dag",
        "tasks": tasks,
        "edges": sum(len(p) for p in graph),
        "depth": depth_of(graph),
        "submit_seconds": round(submitted - started, 3),
        "run_seconds": round(finished - submitted, 3),
        "unblock_latency_ms": {
            "p50": percentile(latency, 0.50),
            "p99": percentile(latency, 0.99),
            "max": max(latency),
        },
        "machine": f"{os.cpu_count()} cores, Python {platform.python_version()}",
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--tasks", type=int, default=10_000)
    parser.add_argument("--concurrency", type=int, default=64)
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--runs", type=int, default=1)
    args = parser.parse_args()
    results = [uvloop.run(run(args.tasks, args.concurrency, args.seed)) for _ in range(args.runs)]
    for result in results:
        print(json.dumps(result))
    if len(results) > 1:
        summary = {
            key: statistics.median(r["unblock_latency_ms"][key] for r in results)
            for key in ("p50", "p99", "max")
        }
        run_seconds = statistics.median(r["run_seconds"] for r in results)
        print(json.dumps({"median_unblock_latency_ms": summary, "median_run_seconds": run_seconds}))


if __name__ == "__main__":
    main()
