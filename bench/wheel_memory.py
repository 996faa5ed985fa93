"""Bytes per scheduled entry in the TimingWheel, and the cost of a same-second burst.

    .venv/bin/python -m bench.wheel_memory [--n 1000000] [--burst 100000] [--runs 3]

Memory: ``tracemalloc`` measures what the wheel holds after ``--n`` inserts with dues
spread over the next hour, then over the next day. Timing, without tracemalloc: the
median of ``--runs`` runs of inserting a ``--burst`` of entries due in one future
second, then popping them all. The last line of output is JSON.
"""

from __future__ import annotations

import argparse
import gc
import json
import random
import statistics
import time
import tracemalloc

from tickwheel.core.wheel import TimingWheel

NOW_MS = 1_700_000_000_000  # mid-hour, mid-day: the spreads reach several levels
HOUR_MS = 3_600_000
DAY_MS = 86_400_000


def bytes_per_entry(n: int, span_ms: int) -> float:
    """Traced bytes held by a wheel with ``n`` entries due within ``span_ms``."""
    gc.collect()
    tracemalloc.start()
    try:
        before = tracemalloc.get_traced_memory()[0]
        wheel = TimingWheel(NOW_MS)
        for i in range(n):
            # A multiplicative hash scatters the dues over the span (not in order).
            wheel.insert(i, NOW_MS + 1 + (i * 2_654_435_761) % span_ms)
        held = tracemalloc.get_traced_memory()[0] - before
    finally:
        tracemalloc.stop()
    assert len(wheel) == n
    return held / n


def burst_ns_per_entry(size: int, *, ahead: bool) -> tuple[float, float]:
    """(insert, pop) ns per entry for ``size`` entries due in one second.

    ``ahead``: the second is 5 s in the future (a wheel slot). Otherwise it is the
    current second: the entries arrive in random order straight into the current run.
    """
    rng = random.Random(size)
    second_ms = NOW_MS + 5_000 if ahead else NOW_MS
    dues = [second_ms + rng.randrange(1_000) for _ in range(size)]
    wheel = TimingWheel(NOW_MS)
    insert = wheel.insert
    start = time.perf_counter_ns()
    for key, due_ms in enumerate(dues):
        insert(key, due_ms)
    inserted = time.perf_counter_ns()
    out = wheel.pop_due(second_ms + 999)
    popped = time.perf_counter_ns()
    assert len(out) == size
    return (inserted - start) / size, (popped - inserted) / size


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--n", type=int, default=1_000_000, help="entries for the memory runs")
    parser.add_argument("--burst", type=int, default=100_000, help="entries in the burst")
    parser.add_argument("--runs", type=int, default=3, help="burst runs (median is kept)")
    args = parser.parse_args()

    result: dict[str, float | int] = {"n": args.n, "burst": args.burst}
    for name, span_ms in (("hour", HOUR_MS), ("day", DAY_MS)):
        per_entry = bytes_per_entry(args.n, span_ms)
        result[f"bytes_per_entry_{name}"] = round(per_entry, 2)
        print(f"memory, {args.n:,} entries over the next {name}: {per_entry:.1f} bytes/entry")

    for name, ahead in (("future", True), ("current", False)):
        runs = [burst_ns_per_entry(args.burst, ahead=ahead) for _ in range(args.runs)]
        insert_ns = statistics.median(r[0] for r in runs)
        pop_ns = statistics.median(r[1] for r in runs)
        result[f"burst_{name}_insert_ns_per_entry"] = round(insert_ns, 1)
        result[f"burst_{name}_pop_ns_per_entry"] = round(pop_ns, 1)
        print(
            f"burst of {args.burst:,} in the {name} second (median of {args.runs}): "
            f"insert {insert_ns:.0f} ns/entry, pop {pop_ns:.0f} ns/entry"
        )
    print(json.dumps(result))


if __name__ == "__main__":
    main()
