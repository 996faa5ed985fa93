"""`tickwheel bench`: Tickwheel's scenarios, and its peers on the same workloads. The
`tickwheel` command hands `bench ...` to these commands from a development install
(`tickwheel/cli/bench.py`)."""

from __future__ import annotations

import asyncio
import json
from collections.abc import Coroutine
from typing import Annotated, Any

import typer

from bench import compare as comparison
from bench import peers
from bench.scenarios import burst as burst_scenario
from bench.scenarios import ceilings as ceilings_scenario
from bench.scenarios import dag as dag_scenario
from bench.scenarios import e2e as e2e_scenario
from bench.scenarios import memory as memory_scenario
from bench.scenarios import scale as scale_scenario
from bench.scenarios import submit as submit_scenario
from bench.scenarios import sustained as sustained_scenario
from bench.stores import Mode

bench = typer.Typer(
    help="Benchmarks: each prints its figures, the last line as JSON.",
    no_args_is_help=True,
    add_completion=False,
)

ModeOption = Annotated[
    Mode, typer.Option(help="embedded (SQLite, one process) or distributed (PostgreSQL + Redis).")
]
Concurrency = Annotated[int, typer.Option(min=1, help="Tasks each worker runs at once.")]
CountWrites = Annotated[
    bool, typer.Option(help="distributed: count PostgreSQL row writes per task (adds 22 s).")
]
SystemName = Annotated[str, typer.Argument(help=f"One of: {', '.join(peers.FACTORIES)}.")]


def emit(result: dict[str, Any]) -> None:
    print(json.dumps(result), flush=True)


def run(work: Coroutine[Any, Any, dict[str, Any]]) -> None:
    emit(asyncio.run(work))


@bench.command("peer")
def peer(
    name: SystemName,
    workload: Annotated[str, typer.Argument(help="e2e or burst.")],
    tasks: Annotated[int, typer.Option(min=1, help="Tasks in the workload.")] = 10_000,
    lead_seconds: Annotated[
        float, typer.Option(min=1, help="burst: seconds from submission to the due instant.")
    ] = 30.0,
) -> None:
    """Run one system's workload of `compare`, Tickwheel's or a peer's (a peer needs the
    extra: pip install -e ".[bench]")."""
    if name not in peers.FACTORIES:
        raise typer.BadParameter(f"unknown system {name!r}", param_hint="NAME")
    if workload not in comparison.WORKLOADS:
        raise typer.BadParameter("e2e or burst", param_hint="WORKLOAD")
    run(peers.base.measure(peers.load(name), workload, tasks, lead_seconds, window=120.0))


@bench.command("burst")
def burst(
    tasks: Annotated[int, typer.Option(min=1, help="Tasks due in the same second.")] = 300_000,
    mode: ModeOption = Mode.EMBEDDED,
    lead_seconds: Annotated[
        float | None,
        typer.Option(
            min=1, help="From the start of submission to the due second [default: 10 + N/4000]."
        ),
    ] = None,
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


@bench.command("sustained")
def sustained(
    rate: Annotated[int, typer.Option(min=1, help="Tasks due each second.")] = 50_000,
    seconds: Annotated[int, typer.Option(min=1, help="For how long.")] = 60,
    mode: ModeOption = Mode.EMBEDDED,
    lead_seconds: Annotated[
        float | None, typer.Option(min=1, help="Until the first due (default: enough to store).")
    ] = None,
) -> None:
    """A steady trigger rate: releases per second and lateness over time."""
    run(sustained_scenario.run(mode, rate, seconds, lead_seconds))


@bench.command("submit")
def submit(
    mode: ModeOption = Mode.EMBEDDED,
    single: Annotated[int, typer.Option(min=1, help="Tasks sent one request each.")] = 3_000,
    batches: Annotated[int, typer.Option(min=1, help="Batch requests sent.")] = 10,
    batch_size: Annotated[int, typer.Option(min=1, max=10_000, help="Tasks a batch.")] = 10_000,
) -> None:
    """Submissions per second: single-task HTTP, batch HTTP and the Python SDK."""
    run(submit_scenario.run(mode, single, batches, batch_size))


@bench.command("scale")
def scale(
    stored: Annotated[
        list[int] | None, typer.Option(min=0, help="Tasks stored (repeat for each size).")
    ] = None,
    mode: ModeOption = Mode.EMBEDDED,
) -> None:
    """Tick cost and lateness with 10K, 1M and 10M tasks stored: flat, or not."""
    run(scale_scenario.run(mode, stored or [10_000, 1_000_000, 10_000_000]))


@bench.command("memory")
def memory(
    tasks: Annotated[int, typer.Option(min=1, help="Tasks on the wheels.")] = 1_000_000,
    mode: ModeOption = Mode.EMBEDDED,
) -> None:
    """Resident bytes per task a scheduler holds on its wheels."""
    run(memory_scenario.run(mode, tasks))


@bench.command("dag")
def dag(
    tasks: Annotated[int, typer.Option(min=2, help="Tasks in the graph.")] = 10_000,
    mode: ModeOption = Mode.EMBEDDED,
    concurrency: Annotated[int, typer.Option(min=1, help="Tasks run at once.")] = 64,
) -> None:
    """A random DAG of N tasks: unblock latency p50/p99."""
    run(dag_scenario.run(mode, tasks, concurrency))


@bench.command("compare")
def compare(
    peer: Annotated[
        list[str] | None, typer.Option(help="A peer to include (repeat); default: all.")
    ] = None,
    mode: Annotated[
        list[Mode] | None, typer.Option(help="Tickwheel's modes to include; default: both.")
    ] = None,
    e2e_tasks: Annotated[int, typer.Option(min=1, help="No-op tasks in e2e.")] = 20_000,
    burst_tasks: Annotated[int, typer.Option(min=1, help="Tasks due at one instant.")] = 20_000,
    rounds: Annotated[
        int, typer.Option(min=1, max=20, help="Interleaved rounds; the table shows medians.")
    ] = 3,
) -> None:
    """Tickwheel and every peer on the same workloads, the same task body, interleaved."""
    chosen = peer or peers.PEERS
    unknown = sorted(set(chosen) - set(peers.PEERS))
    if unknown:
        raise typer.BadParameter(f"unknown peer(s): {', '.join(unknown)}", param_hint="--peer")
    modes = mode or [Mode.DISTRIBUTED, Mode.EMBEDDED]
    names = [peers.TICKWHEEL[m] for m in modes] + list(chosen)
    result = asyncio.run(comparison.compare(names, e2e_tasks, burst_tasks, rounds))
    comparison.print_table(result)
    emit(result)


@bench.command("ceilings")
def ceilings(
    rows: Annotated[int, typer.Option(min=1_000, help="Rows inserted, then updated.")] = 200_000,
    commands: Annotated[int, typer.Option(min=1_000, help="Redis commands.")] = 200_000,
) -> None:
    """What PostgreSQL, SQLite and Redis sustain here: the limits behind every figure."""
    run(ceilings_scenario.run(rows, commands))
