"""Tickwheel's benchmarks: its scenarios (`tickwheel bench`), the same workloads on its
peers (`tickwheel bench compare`), and smaller programs run as `python -m bench.NAME`.
Benchmarks print figures; nothing here passes or fails by the clock.

They live in the source checkout beside `tickwheel/`, never in the package: an install
carries neither them nor the peers' libraries (the `bench` extra). `tickwheel bench`
finds this folder from a development install (`pip install -e '.[bench]'`).
"""

from __future__ import annotations

import os
from pathlib import Path

CHECKOUT = str(Path(__file__).resolve().parent.parent)


def pythonpath() -> str:
    """PYTHONPATH with the checkout first, for the processes the benchmarks start: the
    peers' workers and Tickwheel's own import their tasks from here (`bench.peers`)."""
    rest = [p for p in os.environ.get("PYTHONPATH", "").split(os.pathsep) if p and p != CHECKOUT]
    return os.pathsep.join([CHECKOUT, *rest])
