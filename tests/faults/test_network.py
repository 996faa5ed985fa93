"""Links failing between processes and the stores: one process cut off, every
connection slowed, PostgreSQL or Redis unreachable for longer than the leases."""

from __future__ import annotations

import time
from pathlib import Path

import pytest
from ledger import Ledger
from scenario import Running, assert_nothing_wrong, cluster_for, links, run


@pytest.mark.parametrize(
    "name", ["worker-0", pytest.param("scheduler-0", marks=pytest.mark.full_faults)]
)
def test_one_process_cut_off_from_both_stores(tmp_path: Path, ledger: Ledger, name: str) -> None:
    """Its bytes stop both ways for 10 s, longer than its leases: the others take over
    its tasks or partitions, and what it does on waking is refused."""
    with cluster_for(tmp_path) as cluster, links(cluster) as (to_pg, to_redis, through):
        Running(cluster, schedulers=2, workers=2, env_of={name: through})

        def fault() -> None:
            to_pg.freeze()
            to_redis.freeze()
            time.sleep(10)
            to_pg.thaw()
            to_redis.thaw()

        role = name.split("-")[0]
        verdict = run(f"a {role} cut off from both stores for 10 s", cluster, ledger, fault)
    assert_nothing_wrong(verdict, recovery_seconds=8)


@pytest.mark.full_faults
def test_latency_and_jitter_on_every_connection(tmp_path: Path, ledger: Ledger) -> None:
    """20 ms ± 10 ms each way between every process and both stores, for 20 s: triggering
    slows but never stops, and an API node asked to stop meanwhile exits within its
    shutdown grace (5 s here)."""
    stopping_took: list[float] = []
    with cluster_for(tmp_path) as cluster, links(cluster) as (to_pg, to_redis, through):
        running = Running(cluster, schedulers=2, workers=2, every=through)

        def fault() -> None:
            to_pg.slow(0.02, 0.01)
            to_redis.slow(0.02, 0.01)
            time.sleep(15)
            began = time.monotonic()
            running.by_name["api"].stop()  # SIGTERM, and wait
            stopping_took.append(time.monotonic() - began)
            running.restart("api")
            time.sleep(5)
            to_pg.slow(0)
            to_redis.slow(0)

        verdict = run("20 ± 10 ms on every link for 20 s", cluster, ledger, fault, rate=100)
    assert stopping_took[0] < 5 + 2, stopping_took
    assert_nothing_wrong(verdict, recovery_seconds=5)


@pytest.mark.parametrize(
    "store", ["postgres", pytest.param("redis", marks=pytest.mark.full_faults)]
)
def test_a_store_unreachable_for_longer_than_the_leases(
    tmp_path: Path, ledger: Ledger, store: str
) -> None:
    """Every connection to the store reset and new ones refused for 8 s (leases: 2 s and
    3 s): submissions meet 503, nothing accepted is lost, work resumes when it is back."""
    with cluster_for(tmp_path) as cluster, links(cluster) as (to_pg, to_redis, through):
        Running(cluster, schedulers=2, workers=2, every=through)
        proxy = to_pg if store == "postgres" else to_redis

        def fault() -> None:
            proxy.cut()
            time.sleep(8)
            proxy.restore()

        verdict = run(f"{store} unreachable for 8 s", cluster, ledger, fault)
    assert_nothing_wrong(verdict, recovery_seconds=10)
