"""arq through both workloads."""

from __future__ import annotations

from peer_workloads import check_workloads


async def test_arq_runs_every_task_once() -> None:
    await check_workloads("arq")
