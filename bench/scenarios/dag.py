"""dag: a random graph of N tasks (default 10,000) submitted as one workflow to a node
in this process (embedded: SQLite; distributed: PostgreSQL and Redis). The unblock
latency of a task that waits on others is its start (claim) minus the completion of its
last predecessor: p50/p99/max, and the time the whole graph took.

The graph: task i waits on 1 to 3 tasks drawn from the 200 before it (5% wait on none),
so it is both wide and a few hundred levels deep. Every task must succeed, and none may
start before its last predecessor completed.
"""

from __future__ import annotations

import asyncio
import random
import time
from typing import Any

from bench.figures import spread
from bench.progress import steps
from bench.stores import Mode, fresh_settings, labels
from tickwheel import Workflow
from tickwheel.engine.node import Node
from tickwheel.models import TaskRecord

WINDOW = 200


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


async def run(
    mode: Mode, tasks: int = 10_000, concurrency: int = 64, seed: int = 1
) -> dict[str, Any]:
    graph = random_graph(tasks, seed)
    flow = Workflow("bench-dag")
    for i, predecessors in enumerate(graph):
        flow.task(f"t{i}", "noop", after=[f"t{p}" for p in predecessors])
    async with (
        fresh_settings(mode, concurrency=concurrency, lease_seconds=60) as settings,
        Node(settings=settings) as node,
    ):
        began = time.perf_counter()
        view = await node.submit_workflow(flow)
        submitted = time.perf_counter()
        with steps(f"running a graph of {tasks:,}", tasks) as done:
            while node.worker.completed < tasks:
                done(node.worker.completed)
                await asyncio.sleep(0.05)
        finished = time.perf_counter()
        found = await node.store.get_workflow(view.record.workflow_id)
    assert found is not None
    return labels(mode, "dag") | {
        "tasks": tasks,
        "edges": sum(len(p) for p in graph),
        "depth": depth_of(graph),
        "submit_seconds": round(submitted - began, 3),
        "run_seconds": round(finished - submitted, 3),
        "unblock_latency_ms": spread(unblock_latency(graph, found[1])),
    }


def unblock_latency(graph: list[list[int]], records: list[TaskRecord]) -> list[float]:
    by_name = {r.node_name: r for r in records}
    if any(r.status != "succeeded" for r in records):
        raise RuntimeError("a task of the graph did not succeed")
    latency: list[float] = []
    for i, predecessors in enumerate(graph):
        if not predecessors:
            continue
        mine = by_name[f"t{i}"]
        last_done = max(by_name[f"t{p}"].completed_ms or 0 for p in predecessors)
        if mine.started_ms is None or mine.started_ms < last_done:
            raise RuntimeError(f"t{i} started before its last predecessor completed")
        latency.append(float(mine.started_ms - last_done))
    return latency
