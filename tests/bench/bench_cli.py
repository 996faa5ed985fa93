"""`tickwheel bench` run as users run it, in a subprocess, on the tests' services."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

from services import require

TICKWHEEL = str(Path(sys.executable).with_name("tickwheel"))


def bench_output(*args: str) -> tuple[str, dict[str, Any]]:
    """Run `tickwheel bench ARGS` against the tests' PostgreSQL and the private Redis
    (conftest puts its URL in the environment): what it printed, and its last line
    (JSON) read."""
    env = {**os.environ, "TICKWHEEL_BENCH_DATABASE_URL": require("postgres")}
    done = subprocess.run(
        [TICKWHEEL, "bench", *args], env=env, capture_output=True, text=True, timeout=300
    )
    assert done.returncode == 0, done.stderr[-3000:]
    result: dict[str, Any] = json.loads(done.stdout.strip().splitlines()[-1])
    return done.stdout, result


def bench(*args: str) -> dict[str, Any]:
    """`bench_output`'s JSON result alone."""
    return bench_output(*args)[1]
