"""`bench/cli_start.py` runs and prints its figures (it asserts no time)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def test_cli_start_prints_a_median_per_command() -> None:
    done = subprocess.run(
        [sys.executable, "-m", "bench.cli_start", "--runs", "2"],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 0, done.stderr
    result = json.loads(done.stdout.splitlines()[-1])
    assert result["runs"] == 2
    assert result["tickwheel ls"]["median_ms"] > 0
