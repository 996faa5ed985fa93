"""`tickwheel bench compare`: Tickwheel and its peers on the same two workloads, one
system after another, interleaved, then a table of each one's figures.

Every system is a `peers.base.Peer` and goes through the same code: the same task body
(`recorder.record`, Tickwheel's a registered handler), the same record of starts, the
same check that every task ran exactly once. The workloads are `e2e` (no-op tasks due
now: submitted/s, and drained/s up to the last start within 60 s) and `burst` (tasks
with an ETA at one instant: start lateness, the first start after the instant, and how
many never ran within 60 s of it). Each round runs every system's e2e, then every
system's burst, starting one system further along each round, so that a slow minute of
this shared machine does not always land on the same system; the table shows medians
over the rounds. A system's burst starts far enough ahead for its own submission to
finish (from its e2e submission rate), so that slow submission is not counted as
lateness. Each system's drained/s is also shown as a multiple of the fastest peer's.
"""

from __future__ import annotations

import statistics
from collections.abc import Callable
from typing import Any

from rich.console import Console
from rich.table import Table

from bench import peers
from bench.figures import machine, version
from bench.peers import base
from bench.progress import say

WINDOW_SECONDS = 60.0
WORKLOADS = ("e2e", "burst")
Result = dict[str, Any]


def lead_for(e2e: Result | None, tasks: int) -> float:
    """Seconds ahead to set a burst's due time: its submission, measured in e2e, plus
    half again and 5 s, between 5 s and 300 s."""
    rate = (e2e or {}).get("submitted_per_s") or 1_000
    return min(300.0, max(5.0, 5 + 1.5 * tasks / rate))


async def compare(names: list[str], e2e_tasks: int, burst_tasks: int, rounds: int) -> Result:
    """Every named system (`peers.FACTORIES`) through both workloads, `rounds` times."""
    runs: dict[str, dict[str, list[Result]]] = {n: {w: [] for w in WORKLOADS} for n in names}
    errors: dict[str, str] = {}
    for round_number in range(rounds):
        shift = round_number % len(names)
        turn = names[shift:] + names[:shift]
        for workload, tasks in zip(WORKLOADS, (e2e_tasks, burst_tasks), strict=True):
            for name in turn:
                if name in errors:
                    continue
                say(f"round {round_number + 1}/{rounds}: {name} {workload}")
                last_e2e = runs[name]["e2e"][-1] if runs[name]["e2e"] else None
                lead = lead_for(last_e2e, tasks)
                try:
                    result = await base.measure(peers.load(name), workload, tasks, lead)
                except (ImportError, RuntimeError, OSError) as failure:
                    errors[name] = f"{type(failure).__name__}: {failure}"[:500]
                    say(f"{name}: {errors[name]}")
                    continue
                runs[name][workload].append(result)
    rows = [summarise(name, runs[name], errors.get(name)) for name in names]
    return {
        "workload": "compare",
        "machine": machine() | {n: version(distribution(n)) for n in names},
        "e2e_tasks": e2e_tasks,
        "burst_tasks": burst_tasks,
        "rounds": rounds,
        "rows": with_ratios(rows),
        "runs": runs,
    }


def distribution(name: str) -> str:
    """The PyPI distribution of a system named as in `peers.FACTORIES`."""
    return "tickwheel" if name in peers.TICKWHEEL.values() else name


def summarise(name: str, runs: dict[str, list[Result]], error: str | None) -> Result:
    """Medians over the rounds of one system's figures. A burst whose unrun tasks are
    more than 1% has a p99 beyond the window: it is marked as at least the window."""
    e2e, burst = runs["e2e"], runs["burst"]

    def median(results: list[Result], pick: Callable[[Result], float | None]) -> float | None:
        values = [v for v in map(pick, results) if v is not None]
        return statistics.median(values) if values else None

    def p99(result: Result) -> float:
        beyond = result["never_ran"] > result["tasks"] / 100
        return WINDOW_SECONDS * 1000 if beyond else float(result["start_lateness_ms"]["p99"])

    burst_p99 = median(burst, p99)
    return {
        "system": name,
        "submitted_per_s": median(e2e, lambda r: r["submitted_per_s"]),
        "drained_per_s": median(e2e, lambda r: r["drained_per_s"]),
        "e2e_unfinished": median(e2e, lambda r: r["tasks"] - r["ran"]),
        "burst_p50_ms": median(burst, lambda r: r["start_lateness_ms"]["p50"]),
        "burst_p99_ms": burst_p99,
        "burst_p99_beyond_window": burst_p99 is not None and burst_p99 >= WINDOW_SECONDS * 1000,
        "burst_max_ms": median(burst, lambda r: r["start_lateness_ms"]["max"]),
        "first_start_ms": median(burst, lambda r: r["first_start_ms"]),
        "burst_never_ran": median(burst, lambda r: r["never_ran"]),
        "repeats": sum(r["repeats"] for r in e2e + burst),
        "error": error,
    }


def with_ratios(rows: list[Result]) -> list[Result]:
    """Each row's drained/s as a multiple of the fastest peer's (None without a peer)."""
    fastest = max(
        (r["drained_per_s"] for r in rows if r["system"] in peers.PEERS and r["drained_per_s"]),
        default=None,
    )
    for row in rows:
        drained = row["drained_per_s"]
        row["drained_vs_fastest_peer"] = (
            None if drained is None or fastest is None else round(drained / fastest, 2)
        )
    return rows


COLUMNS = (
    "system",
    "version",
    "submitted/s",
    "drained/s",
    "vs fastest peer",
    "burst p50 ms",
    "p99 ms",
    "max ms",
    "first start ms",
    "never ran",
    "ran twice",
)


def header(result: Result) -> str:
    """The machine and the software the figures come from, and what was run."""
    m = result["machine"]
    names = [r["system"] for r in result["rows"]]
    versions = ", ".join(f"{n} {m[n]}" for n in names)
    return (
        f"{m['cores']} cores, {m['memory_gib']} GiB, Python {m['python']}, {m['system']}\n"
        f"{versions}\n"
        f"e2e: {result['e2e_tasks']:,} tasks due now; burst: {result['burst_tasks']:,} due at "
        f"one instant; medians of {result['rounds']} round(s), interleaved"
    )


def table(result: Result) -> Table:
    caption = (
        "drained/s: tasks over the time from the first submission to the last start; "
        "burst: start minus due, and the first start after due; "
        f"≥: over 1% never ran within {WINDOW_SECONDS:.0f} s"
    )
    grid = Table(title="Tickwheel and its peers on this machine", caption=caption)
    for heading in COLUMNS:
        label = heading in ("system", "version")
        grid.add_column(heading, justify="left" if label else "right", no_wrap=True)
    for row in result["rows"]:
        name = row["system"]
        at_least = "≥ " if row["burst_p99_beyond_window"] else ""
        cells = [
            _cell(row["submitted_per_s"], "{:,.0f}"),
            _cell(row["drained_per_s"], "{:,.0f}"),
            _cell(row["drained_vs_fastest_peer"], "{:.2f}x"),
            _cell(row["burst_p50_ms"], "{:,.0f}"),
            at_least + _cell(row["burst_p99_ms"], "{:,.0f}"),
            _cell(row["burst_max_ms"], "{:,.0f}"),
            _cell(row["first_start_ms"], "{:,.0f}"),
            _cell(row["burst_never_ran"], "{:,.0f}"),
            f"{row['repeats']:,}",
        ]
        if row["error"]:
            cells = ["failed: " + row["error"].splitlines()[0][:60]] + [""] * (len(cells) - 1)
        grid.add_row(name, result["machine"][name], *cells)
    return grid


def _cell(value: float | None, form: str) -> str:
    return "-" if value is None else form.format(value)


def print_table(result: Result) -> None:
    console = Console(width=160)
    console.print(header(result))
    console.print(table(result))
