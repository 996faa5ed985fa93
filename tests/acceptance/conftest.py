from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from harness import (
    Tickwheel,
    target_fixture,  # noqa: F401  (registers the fixture `target`)
)


@pytest.fixture
def tickwheel_factory(tmp_path: Path) -> Iterator[type]:
    started: list[Tickwheel] = []

    class Factory:
        @staticmethod
        def start(db: Path | None = None, **kwargs: object) -> Tickwheel:
            tw = Tickwheel(db or tmp_path / "tickwheel.db", **kwargs).start()  # type: ignore[arg-type]
            started.append(tw)
            return tw

    yield Factory
    for tw in started:
        if tw.process and tw.process.poll() is None:
            tw.process.kill()
            tw.process.wait(10)
