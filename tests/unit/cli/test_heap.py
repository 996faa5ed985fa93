"""A long-running process hides its startup objects from the collector."""

from __future__ import annotations

import gc
from collections.abc import Iterator

import pytest

from tickwheel.cli import heap


@pytest.fixture
def restored() -> Iterator[None]:
    threshold = gc.get_threshold()
    yield
    gc.unfreeze()
    gc.set_threshold(*threshold)


@pytest.mark.usefixtures("restored")
def test_settle_freezes_what_exists_and_collects_the_young_less_often() -> None:
    kept = [object() for _ in range(1000)]
    heap.settle()
    assert gc.get_freeze_count() >= len(kept)
    assert gc.get_threshold()[0] == heap.YOUNG_THRESHOLD
