"""The peers' tests: each runs a small `e2e` and `burst` on the real worker commands,
against the tests' Redis database (never a bench database: `reset()` flushes it)."""

from __future__ import annotations

from collections.abc import Awaitable, Callable

import pytest
from services import require

from tickwheel.bench import peers
from tickwheel.bench.peers.base import burst, e2e
from tickwheel.bench.peers.sink import SINK_URL_ENV

TASKS = 20
LEAD_SECONDS = 2.0

E2E_KEYS = {"system", "version", "workload", "tasks", "ran", "repeats", "seconds"}
E2E_KEYS |= {"tasks_per_s", "submit_per_s"}
BURST_KEYS = {"system", "version", "workload", "tasks", "ran", "never_ran", "repeats"}
BURST_KEYS |= {"early", "start_lateness_ms", "lead_seconds", "submission_outlasted_lead"}


@pytest.fixture
def check_peer(monkeypatch: pytest.MonkeyPatch) -> Callable[[str], Awaitable[None]]:
    """Runs both workloads on the named peer; every task runs, once."""
    monkeypatch.setenv(SINK_URL_ENV, require("redis"))

    async def check(name: str) -> None:
        peer = peers.load(name)
        try:
            now = await e2e(peer, TASKS)
            later = await burst(peer, TASKS, LEAD_SECONDS)
        finally:
            await peer.close()
        assert now.keys() >= E2E_KEYS
        assert (now["workload"], now["ran"], now["repeats"]) == ("e2e", TASKS, 0)
        assert later.keys() >= BURST_KEYS
        assert set(later["start_lateness_ms"]) == {"p50", "p99", "max"}
        assert (later["ran"], later["never_ran"], later["repeats"]) == (TASKS, 0, 0)
        assert later["system"] == now["system"] == peer.name

    return check
