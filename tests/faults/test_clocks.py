"""One node's clock wrong or stepped (libfaketime on that process only): the cluster
keeps time by the store's clock, so nothing fires early or late and no lease is taken
while it holds."""

from __future__ import annotations

import os
import time
from pathlib import Path

import pytest
from ledger import Ledger
from scenario import Running, assert_nothing_wrong, cluster_for, run

LIBFAKETIME = "/usr/lib/x86_64-linux-gnu/faketime/libfaketime.so.1"


def faked(offset: str = "+0", *, file: Path | None = None) -> dict[str, str]:
    """The environment that puts a process's wall clock `offset` away from the truth
    (or at what `file` says, read again every second). The monotonic clock is left
    alone, as a real host's is when its wall clock is wrong or stepped."""
    if not os.path.exists(LIBFAKETIME):
        reason = f"!!! no libfaketime at {LIBFAKETIME} (make test installs it): NOT run !!!"
        if os.environ.get("TICKWHEEL_REQUIRE_SERVICES") == "1":
            pytest.fail(reason)
        pytest.skip(reason)
    env = {"LD_PRELOAD": LIBFAKETIME, "DONT_FAKE_MONOTONIC": "1"}
    if file is None:
        return {**env, "FAKETIME": offset}
    return {**env, "FAKETIME_TIMESTAMP_FILE": str(file), "FAKETIME_CACHE_DURATION": "1"}


@pytest.mark.parametrize(
    ("name", "offset"),
    [
        ("scheduler-0", "+60s"),
        pytest.param("scheduler-0", "-60s", marks=pytest.mark.full_faults),
        pytest.param("worker-0", "+60s", marks=pytest.mark.full_faults),
        ("worker-0", "-60s"),
    ],
)
def test_a_node_whose_clock_is_a_minute_off(
    tmp_path: Path, ledger: Ledger, name: str, offset: str
) -> None:
    with cluster_for(tmp_path) as cluster:
        running = Running(cluster, schedulers=2, workers=2, env_of={name: faked(offset)})
        verdict = run(
            f"{name.split('-')[0]} clock {offset.replace('s', ' s')}",
            cluster,
            ledger,
            lambda: time.sleep(8),
        )
        log = running.by_name[name].log.read_text()
    assert "s ahead of the store's" in log or "s behind the store's" in log, log[-2000:]
    assert verdict.ran_twice == 0, verdict  # no lease was taken while it held
    assert_nothing_wrong(verdict, recovery_seconds=2)


def test_a_scheduler_clock_stepped_forward_then_back(tmp_path: Path, ledger: Ledger) -> None:
    offset = tmp_path / "faketime"
    offset.write_text("+0\n")
    with cluster_for(tmp_path) as cluster:
        Running(cluster, schedulers=2, workers=2, env_of={"scheduler-0": faked(file=offset)})

        def fault() -> None:
            offset.write_text("+30s\n")
            time.sleep(5)
            offset.write_text("+0\n")
            time.sleep(5)

        verdict = run("scheduler clock stepped 30 s forward, then back", cluster, ledger, fault)
    assert verdict.ran_twice == 0, verdict
    assert_nothing_wrong(verdict, recovery_seconds=2)
