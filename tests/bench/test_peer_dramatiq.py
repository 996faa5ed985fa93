"""Dramatiq, on its Redis broker, through both workloads."""

from __future__ import annotations

from peer_workloads import check_workloads


async def test_dramatiq_runs_every_task_once() -> None:
    await check_workloads("dramatiq")
