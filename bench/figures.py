"""Summaries every scenario prints: percentiles, and the machine the figures come from."""

from __future__ import annotations

import os
import platform
from importlib import metadata


def percentile(values: list[float], q: float) -> float:
    """The `q` quantile (0..1) of `values` by nearest rank; 0.0 when there are none."""
    if not values:
        return 0.0
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))]


def spread(values: list[float]) -> dict[str, float]:
    """p50, p99 and max, rounded to a tenth."""
    return {
        "p50": round(percentile(values, 0.50), 1),
        "p99": round(percentile(values, 0.99), 1),
        "max": round(max(values, default=0.0), 1),
    }


def version(distribution: str) -> str:
    try:
        return metadata.version(distribution)
    except metadata.PackageNotFoundError:
        return "not installed"


def memory_gib() -> float:
    with open("/proc/meminfo") as info:
        for line in info:
            if line.startswith("MemTotal:"):
                return round(int(line.split()[1]) / 1024 / 1024, 1)
    return 0.0


def machine() -> dict[str, str | int | float]:
    """Cores, memory and software versions, to print beside every table."""
    return {
        "cores": os.cpu_count() or 0,
        "memory_gib": memory_gib(),
        "python": platform.python_version(),
        "system": f"{platform.system()} {platform.release()}",
        "tickwheel": version("tickwheel"),
    }
