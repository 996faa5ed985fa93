"""Node: a start that fails half way closes again what it opened."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from tickwheel import node as node_module
from tickwheel.config import Settings
from tickwheel.node import Node
from tickwheel.storage.base import Store


async def test_a_queue_that_cannot_open_closes_the_store_opened_before(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    opened: list[Store] = []
    closed: list[Store] = []
    open_store = node_module.open_store_when_reachable

    async def recording_open_store(*args: Any, **kwargs: Any) -> Store:
        store = await open_store(*args, **kwargs)
        close = store.close

        async def recording_close() -> None:
            closed.append(store)
            await close()

        monkeypatch.setattr(store, "close", recording_close)
        opened.append(store)
        return store

    monkeypatch.setattr(node_module, "open_store_when_reachable", recording_open_store)
    settings = Settings(
        database_url=f"sqlite:///{tmp_path / 'node.db'}",
        redis_url="nosuch://127.0.0.1:6379/0",  # refused as it is parsed: nothing connects
    )
    with pytest.raises(ValueError, match="scheme"):
        await Node(settings=settings).start()
    assert len(opened) == 1
    assert closed == opened
