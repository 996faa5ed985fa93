"""Celery as a peer: its documented workers run every task of both workloads, once."""

from __future__ import annotations

from collections.abc import Awaitable, Callable

import pytest

pytestmark = pytest.mark.slow


async def test_celery_runs_every_task_once(check_peer: Callable[[str], Awaitable[None]]) -> None:
    await check_peer("celery")
