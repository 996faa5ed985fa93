"""The fault suite: each scenario strikes a real cluster of processes with one fault
while work flows, then checks, from the handlers' own record, that every accepted task
succeeded, none ran early, any second run had its result refused, and how soon the
cluster recovered. `make faults` runs every scenario and prints the table; `make test`
runs those not marked `full_faults`."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

# The cluster and target harness of the acceptance tests.
sys.path.insert(0, str(Path(__file__).parent.parent / "acceptance"))

from harness import (
    Target,
    target_fixture,  # noqa: F401  (registers the fixture `target`)
)
from ledger import HEADER, VERDICTS, Ledger
from runs import TargetRuns


@pytest.fixture
def ledger(target: Target) -> Ledger:
    """Tasks that call the target, each run holding its worker 0.1 s (a test may set
    `target.delays[TargetRuns.PATH]` to another time)."""
    return Ledger(TargetRuns(target, task_seconds=0.1))


def pytest_terminal_summary(terminalreporter: pytest.TerminalReporter) -> None:
    if not VERDICTS:
        return
    rows = [HEADER, *(v.row() for v in VERDICTS)]
    widths = [max(len(r[i]) for r in rows) for i in range(len(HEADER))]
    terminalreporter.section("fault scenarios")
    for i, row in enumerate(rows):
        cells = (cell.ljust(width) for cell, width in zip(row, widths, strict=True))
        terminalreporter.write_line("| " + " | ".join(cells) + " |")
        if i == 0:
            terminalreporter.write_line("|" + "|".join("-" * (w + 2) for w in widths) + "|")
