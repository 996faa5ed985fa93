"""`tickwheel bench compare` at a tiny size (Tickwheel embedded and SAQ, one round):
every system goes through both workloads and the table holds every column. Nothing here
asserts a time: this machine is shared and noisy."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
import redis
from bench_cli import bench_output

from bench.compare import COLUMNS
from bench.peers.saq_peer import SaqPeer
from bench.peers.sink import sink_url

TASKS = "200"


@pytest.fixture
def saq_keys_deleted() -> Iterator[None]:
    """SAQ's broker keys in the private Redis, deleted afterwards (the harness deletes
    them before each run, not after)."""
    yield
    with redis.Redis.from_url(sink_url()) as client:
        for pattern in SaqPeer.broker_keys:
            for found in client.scan_iter(match=pattern):
                client.delete(found)


@pytest.mark.usefixtures("saq_keys_deleted")
def test_compare_reports_every_column_for_every_system() -> None:
    sizes = ("--e2e-tasks", TASKS, "--burst-tasks", TASKS, "--rounds", "1")
    printed, result = bench_output("compare", "--mode", "embedded", "--peer", "saq", *sizes)
    rows = {row["system"]: row for row in result["rows"]}
    assert list(rows) == ["tickwheel-embedded", "saq"]
    for name, row in rows.items():
        assert row["error"] is None, name
        assert (row["e2e_unfinished"], row["burst_never_ran"], row["repeats"]) == (0, 0, 0)
        for figure in ("submitted_per_s", "drained_per_s", "first_start_ms"):
            assert row[figure] is not None, (name, figure)
        assert row["burst_p50_ms"] <= row["burst_p99_ms"] <= row["burst_max_ms"]
        assert result["machine"][name] != "not installed"
    assert rows["saq"]["drained_vs_fastest_peer"] == 1.0
    assert rows["tickwheel-embedded"]["drained_vs_fastest_peer"] > 0
    for runs in result["runs"].values():
        assert [len(runs["e2e"]), len(runs["burst"])] == [1, 1]
    for heading in ("cores", "GiB", "Python", "saq", *COLUMNS):
        assert heading in printed, heading
