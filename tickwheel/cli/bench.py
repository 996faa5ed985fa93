"""`tickwheel bench`: Tickwheel's scenarios, and its peers on the same workloads."""

from __future__ import annotations

import asyncio
import json
from collections.abc import Coroutine
from typing import Annotated, Any

import typer

from tickwheel.bench import peers
from tickwheel.bench.scenarios import burst as burst_scenario
from tickwheel.bench.scenarios import e2e as e2e_scenario
from tickwheel.bench.stores import Mode

bench = typer.Typer(
    help="Benchmarks: each prints its figures, the last line as JSON.",
    no_args_is_help=True,
)

ModeOption = Annotated[
    Mode, typer.Option(help="embedded (SQLite, one process) or distributed (PostgreSQL + Redis).")
]
Concurrency = Annotated[int, typer.Option(min=1, help="Tasks each worker runs at once.")]
CountWrites = Annotated[
    bool, typer.Option(help="distributed: count PostgreSQL row writes per task (adds 22 s).")
]
PeerName = Annotated[str, typer.Argument(help=f"One of: {', '.join(peers.MODULES)}.")]


def emit(result: dict[str, Any]) -> None:
    print(json.dumps(result), flush=True)


def run(work: Coroutine[Any, Any, dict[str, Any]]) -> None:
    emit(asyncio.run(work))


@bench.command("peer")
def peer(
    name: PeerName,
    workload: Annotated[str, typer.Argument(help="e2e or burst.")],
    tasks: Annotated[int, typer.Option(min=1, help="Tasks in the workload.")] = 10_000,
    lead_seconds: Annotated[
        float, typer.Option(min=1, help="burst: seconds from submission to the due instant.")
    ] = 30.0,
) -> None:
    """Run one peer's workload (needs the extra: pip install -e ".[bench]")."""
    if name not in peers.MODULES:
        raise typer.BadParameter(f"unknown peer {name!r}", param_hint="NAME")
    if workload not in ("e2e", "burst"):
        raise typer.BadParameter("e2e or burst", param_hint="WORKLOAD")
    run(_peer(name, workload, tasks, lead_seconds))


async def _peer(name: str, workload: str, tasks: int, lead_seconds: float) -> dict[str, Any]:
    system = peers.load(name)
    try:
        if workload == "e2e":
            return await peers.base.e2e(system, tasks)
        return await peers.base.burst(system, tasks, lead_seconds)
    finally:
        await system.close()


@bench.command("burst")
def burst(
    tasks: Annotated[int, typer.Option(min=1, help="Tasks due in the same second.")] = 300_000,
    mode: ModeOption = Mode.EMBEDDED,
    lead_seconds: Annotated[
        float, typer.Option(min=1, help="From the start of submission to the due second.")
    ] = 30.0,
    concurrency: Concurrency = 512,
    count_writes: CountWrites = False,
) -> None:
    """N tasks due in one second: trigger and start lateness, drain time."""
    run(
        burst_scenario.run(
            mode, tasks, lead_seconds, concurrency=concurrency, count_writes=count_writes
        )
    )


@bench.command("e2e")
def e2e(
    tasks: Annotated[int, typer.Option(min=1, help="No-op tasks due now.")] = 50_000,
    mode: ModeOption = Mode.EMBEDDED,
    concurrency: Concurrency = 512,
    count_writes: CountWrites = False,
) -> None:
    """N no-op tasks submitted, triggered, claimed, run and completed: tasks/s."""
    run(e2e_scenario.run(mode, tasks, concurrency=concurrency, count_writes=count_writes))
