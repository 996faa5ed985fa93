"""Distributed mode's libraries are extras: a URL that needs a missing one fails in one
line naming the extra, and the embedded server never imports them."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

from tickwheel import extras
from tickwheel.clock import SystemClock
from tickwheel.errors import MissingExtra
from tickwheel.metrics.factory import open_metrics
from tickwheel.metrics.recorder import Recorder
from tickwheel.queue.factory import open_queue
from tickwheel.storage.factory import open_store


@pytest.fixture
def without_extras(monkeypatch: pytest.MonkeyPatch) -> None:
    """As if neither asyncpg nor redis were installed."""
    monkeypatch.setattr(extras, "find_spec", lambda name: None)


@pytest.mark.usefixtures("without_extras")
def test_each_url_names_its_extra() -> None:
    with pytest.raises(MissingExtra) as raised:
        extras.require_for("postgresql://postgres@127.0.0.1/tickwheel", None)
    assert str(raised.value) == (
        "the PostgreSQL store needs asyncpg: pip install 'tickwheel[postgres]'"
    )
    with pytest.raises(MissingExtra, match=r"^the Redis ready queue needs redis: pip install "):
        extras.require_for("sqlite:///./tickwheel.db", "redis://127.0.0.1:6379/0")
    extras.require_for("sqlite:///./tickwheel.db", None)  # embedded needs neither


@pytest.mark.usefixtures("without_extras")
async def test_the_factories_check_before_they_import() -> None:
    with pytest.raises(MissingExtra, match=r"tickwheel\[postgres\]"):
        await open_store("postgres://postgres@127.0.0.1/tickwheel", partitions=4)
    with pytest.raises(MissingExtra, match=r"tickwheel\[redis\]"):
        open_queue("redis://127.0.0.1:6379/0", now_ms=lambda: 0)
    with pytest.raises(MissingExtra, match=r"tickwheel\[redis\]"):
        open_metrics(Recorder(SystemClock()), "redis://127.0.0.1:6379/0", prefix="tickwheel:")


def test_the_embedded_server_imports_neither_library() -> None:
    probe = (
        "import sys, json, tickwheel.cli.main, tickwheel.engine.node, tickwheel.api.app\n"
        "print(json.dumps(sorted({m.split('.')[0] for m in sys.modules} & "
        "{'asyncpg', 'redis', 'hiredis', 'bench'})))"
    )
    run = subprocess.run([sys.executable, "-c", probe], capture_output=True, check=True)
    assert json.loads(run.stdout) == []
