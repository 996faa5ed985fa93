"""SAQ through both workloads: its documented workers run every task, once."""

from __future__ import annotations

from peer_workloads import check_workloads


async def test_saq_runs_every_task_once() -> None:
    await check_workloads("saq")
