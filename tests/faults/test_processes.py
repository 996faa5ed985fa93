"""Processes dying, pausing and being replaced while work flows."""

from __future__ import annotations

import signal
import time
from collections import Counter
from pathlib import Path

import pytest
from harness import Target, wait_for
from ledger import Ledger
from runs import TargetRuns
from scenario import Running, assert_nothing_wrong, cluster_for, run

# A run in the worker-kill scenario holds its slot this long (the others keep the
# ledger's 0.1 s): the victim is killed well within a run it was seen start.
MID_TASK_SECONDS = 0.3


def busiest_worker(running: Running, ledger: Ledger) -> str:
    """The worker running the most tasks whose handler started within the last half of a
    run (not only claimed ahead, waiting for a slot, nor about to end before the kill
    lands), waited for (a few seconds at most)."""
    found: list[str] = []

    def holding() -> bool:
        since = time.time() - MID_TASK_SECONDS / 2
        started = {task for task, starts in ledger.starts().items() if max(starts) > since}
        rows = running.cluster.query(
            "SELECT worker_id, task_id FROM tasks WHERE status = 'running'"
        )
        mid_run = Counter(str(r[0]) for r in rows if r[1] in started)
        found[:] = [worker for worker, _ in mid_run.most_common(1)]
        return bool(found)

    assert wait_for(holding, timeout=5, interval=0.05), "no worker held a task mid-run"
    return found[0]


def test_kill_9_of_a_worker_mid_task(tmp_path: Path, ledger: Ledger, target: Target) -> None:
    target.delays[TargetRuns.PATH] = MID_TASK_SECONDS
    with cluster_for(tmp_path) as cluster:
        running = Running(cluster, schedulers=2, workers=2)

        def fault() -> None:
            victim = busiest_worker(running, ledger)
            running.by_name[victim].kill()
            running.start("worker", f"{victim}-again")

        verdict = run("kill -9 of a worker mid-task", cluster, ledger, fault)
    # Its tasks wait out their 2 s leases, then the reaper hands them on.
    assert verdict.ran_twice > 0, "the killed worker held no task: the scenario tested nothing"
    assert_nothing_wrong(verdict, recovery_seconds=8)


def test_kill_9_of_a_scheduler_while_tasks_come_due(tmp_path: Path, ledger: Ledger) -> None:
    with cluster_for(tmp_path) as cluster:
        running = Running(cluster, schedulers=2, workers=2)
        verdict = run(
            "kill -9 of a scheduler", cluster, ledger, running.by_name["scheduler-0"].kill
        )
    # Its partitions wait out their 3 s lease, then the other takes them.
    assert_nothing_wrong(verdict, recovery_seconds=8)


def test_kill_9_of_the_api_mid_batch(tmp_path: Path, ledger: Ledger) -> None:
    with cluster_for(tmp_path) as cluster:
        running = Running(cluster, schedulers=1, workers=2)

        def fault() -> None:
            running.by_name["api"].kill()
            running.restart("api")

        verdict = run("kill -9 of the API", cluster, ledger, fault, rate=1000)
    assert_nothing_wrong(verdict, recovery_seconds=8)


@pytest.mark.parametrize(
    "role", ["worker", pytest.param("scheduler", marks=pytest.mark.full_faults)]
)
def test_sigstop_past_the_lease_then_sigcont(tmp_path: Path, ledger: Ledger, role: str) -> None:
    """A paused process (a long GC, a frozen VM) wakes to find its leases taken over: its
    late results are refused and it gives back what it no longer holds."""
    with cluster_for(tmp_path) as cluster:
        running = Running(cluster, schedulers=2, workers=2)

        def fault() -> None:
            name = busiest_worker(running, ledger) if role == "worker" else "scheduler-0"
            paused = running.by_name[name]
            paused.signal(signal.SIGSTOP)
            time.sleep(6)  # past its 2 s task leases and 3 s partition leases
            paused.signal(signal.SIGCONT)

        verdict = run(f"SIGSTOP of a {role} for 6 s, then SIGCONT", cluster, ledger, fault)
    assert_nothing_wrong(verdict, recovery_seconds=8)


@pytest.mark.full_faults
def test_a_rolling_restart_of_every_process(tmp_path: Path, ledger: Ledger) -> None:
    """SIGTERM and start again, one process at a time: graceful stops hand everything
    over, so nothing runs twice."""
    with cluster_for(tmp_path) as cluster:
        running = Running(cluster, schedulers=2, workers=2)

        def fault() -> None:
            for name in list(running.by_name):
                running.restart(name)
                time.sleep(2)

        verdict = run("rolling restart of every process", cluster, ledger, fault)
    assert verdict.ran_twice == 0, verdict
    assert_nothing_wrong(verdict, recovery_seconds=8)
