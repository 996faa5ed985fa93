"""`tickwheel bench compare`: Tickwheel and each peer on the same two workloads, one
system after another, interleaved, then a table of each one's ratio to Tickwheel.

The workloads are those of `peers.base`: `e2e` (no-op tasks due now: tasks/s over what
ran within 60 s) and `burst` (tasks with an ETA at one instant: start lateness, and how
many never ran within 60 s of it). Each round runs every system's e2e, then every
system's burst, starting one system further along each round, so that a slow minute of
this shared machine does not always land on the same system. The reference is Tickwheel
in distributed mode, which runs on the same Redis and PostgreSQL as the peers; embedded
Tickwheel is a row too. A system's burst starts far enough ahead for its own submission
to finish (from its e2e submission rate), so that slow submission is not counted as
lateness.
"""

from __future__ import annotations

import statistics
from collections.abc import Awaitable, Callable
from typing import Any

from rich.console import Console
from rich.table import Table

from tickwheel.bench import peers
from tickwheel.bench.figures import machine, version
from tickwheel.bench.peers import base
from tickwheel.bench.progress import say
from tickwheel.bench.scenarios import burst as burst_scenario
from tickwheel.bench.scenarios import e2e as e2e_scenario
from tickwheel.bench.stores import Mode

REFERENCE = "tickwheel (distributed)"
WINDOW_SECONDS = 60.0
Result = dict[str, Any]
Workload = Callable[[int, float], Awaitable[Result]]  # (tasks, lead seconds) -> result


def tickwheel_system(mode: Mode) -> tuple[str, dict[str, Workload]]:
    async def e2e(tasks: int, _lead: float) -> Result:
        return await e2e_scenario.run(mode, tasks)

    async def burst(tasks: int, lead: float) -> Result:
        return await burst_scenario.run(mode, tasks, lead, window=WINDOW_SECONDS)

    return f"tickwheel ({mode})", {"e2e": e2e, "burst": burst}


def peer_system(name: str) -> tuple[str, dict[str, Workload]]:
    async def e2e(tasks: int, _lead: float) -> Result:
        system = peers.load(name)
        try:
            return await base.e2e(system, tasks, WINDOW_SECONDS)
        finally:
            await system.close()

    async def burst(tasks: int, lead: float) -> Result:
        system = peers.load(name)
        try:
            return await base.burst(system, tasks, lead, WINDOW_SECONDS)
        finally:
            await system.close()

    return name, {"e2e": e2e, "burst": burst}


def lead_for(e2e: Result | None, tasks: int) -> float:
    """Seconds ahead to set a burst's due time: its submission, measured in e2e, plus
    half again and 5 s, between 5 s and 300 s."""
    rate = (e2e or {}).get("submit_per_s") or 1_000
    return min(300.0, max(5.0, 5 + 1.5 * tasks / rate))


async def compare(
    names: list[str], modes: list[Mode], e2e_tasks: int, burst_tasks: int, rounds: int
) -> Result:
    systems = dict([tickwheel_system(m) for m in modes] + [peer_system(n) for n in names])
    runs: dict[str, dict[str, list[Result]]] = {s: {"e2e": [], "burst": []} for s in systems}
    errors: dict[str, str] = {}
    order = list(systems)
    for round_number in range(rounds):
        shift = round_number % len(order)
        turn = order[shift:] + order[:shift]
        for workload, tasks in (("e2e", e2e_tasks), ("burst", burst_tasks)):
            for name in turn:
                if name in errors:
                    continue
                say(f"round {round_number + 1}/{rounds}: {name} {workload}")
                last_e2e = runs[name]["e2e"][-1] if runs[name]["e2e"] else None
                try:
                    result = await systems[name][workload](tasks, lead_for(last_e2e, tasks))
                except (ImportError, RuntimeError, OSError) as failure:
                    errors[name] = f"{type(failure).__name__}: {failure}"[:500]
                    say(f"{name}: {errors[name]}")
                    continue
                runs[name][workload].append(result)
    rows = [summarise(name, runs[name], errors.get(name)) for name in systems]
    return {
        "workload": "compare",
        "machine": machine() | {n: version(n) for n in names},
        "e2e_tasks": e2e_tasks,
        "burst_tasks": burst_tasks,
        "rounds": rounds,
        "reference": REFERENCE,
        "rows": with_ratios(rows),
        "runs": runs,
    }


def summarise(name: str, runs: dict[str, list[Result]], error: str | None) -> Result:
    """Medians over the rounds of one system's figures. A burst whose unrun tasks are
    more than 1% has a p99 beyond the window: it is marked as at least the window."""
    e2e, burst = runs["e2e"], runs["burst"]

    def median(results: list[Result], pick: Callable[[Result], float]) -> float | None:
        return statistics.median(pick(r) for r in results) if results else None

    def p99(result: Result) -> float:
        beyond = result["never_ran"] > result["tasks"] / 100
        return WINDOW_SECONDS * 1000 if beyond else float(result["start_lateness_ms"]["p99"])

    burst_p99 = median(burst, p99)
    return {
        "system": name,
        "e2e_tasks_per_s": median(e2e, lambda r: r["tasks_per_s"]),
        "e2e_unfinished": median(e2e, lambda r: r["tasks"] - r["ran"]),
        "burst_p50_ms": median(burst, lambda r: r["start_lateness_ms"]["p50"]),
        "burst_p99_ms": burst_p99,
        "burst_p99_beyond_window": burst_p99 is not None and burst_p99 >= WINDOW_SECONDS * 1000,
        "burst_never_ran": median(burst, lambda r: r["never_ran"]),
        "repeats": sum(r.get("repeats", 0) for r in e2e + burst),
        "error": error,
    }


def with_ratios(rows: list[Result]) -> list[Result]:
    """Each row's e2e throughput and burst p99 as a multiple of the reference's."""
    reference = next((r for r in rows if r["system"] == REFERENCE), None)
    for row in rows:
        row["e2e_ratio"] = _ratio(row["e2e_tasks_per_s"], reference, "e2e_tasks_per_s")
        row["burst_p99_ratio"] = _ratio(row["burst_p99_ms"], reference, "burst_p99_ms")
    return rows


def _ratio(value: float | None, reference: Result | None, key: str) -> float | None:
    if value is None or reference is None or not reference.get(key):
        return None
    return round(value / float(reference[key]), 2)


def table(result: Result) -> Table:
    m = result["machine"]
    caption = (
        f"{m['cores']} cores, {m['memory_gib']} GiB, Python {m['python']}, {m['system']}; "
        f"e2e {result['e2e_tasks']:,} no-op tasks, burst {result['burst_tasks']:,} due at one "
        f"instant; medians of {result['rounds']} round(s); ratio = system / {REFERENCE}; "
        f"≥: over 1% never ran within {WINDOW_SECONDS:.0f} s"
    )
    grid = Table(title="Tickwheel and its peers on this machine", caption=caption)
    for heading in (
        "system",
        "version",
        "e2e tasks/s",
        "e2e ratio",
        "burst p50 ms",
        "burst p99 ms",
        "p99 ratio",
        "never ran",
    ):
        grid.add_column(heading, justify="left" if heading in ("system", "version") else "right")
    for row in result["rows"]:
        name = row["system"]
        distribution = "tickwheel" if name.startswith("tickwheel") else name
        at_least = "≥ " if row["burst_p99_beyond_window"] else ""
        cells = [
            _cell(row["e2e_tasks_per_s"], "{:,.0f}"),
            _cell(row["e2e_ratio"], "{:.2f}x"),
            _cell(row["burst_p50_ms"], "{:,.0f}"),
            at_least + _cell(row["burst_p99_ms"], "{:,.0f}"),
            at_least + _cell(row["burst_p99_ratio"], "{:.2f}x"),
            _cell(row["burst_never_ran"], "{:,.0f}"),
        ]
        if row["error"]:
            cells = ["failed: " + row["error"].splitlines()[0][:40], "", "", "", "", ""]
        grid.add_row(name, m.get(distribution, m["tickwheel"]), *cells)
    return grid


def _cell(value: float | None, form: str) -> str:
    return "-" if value is None else form.format(value)


def print_table(result: Result) -> None:
    Console(width=140).print(table(result))
