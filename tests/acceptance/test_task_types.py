"""A fresh `tickwheel up` with strict task types: it knows its own App's types before its
worker first reports, and refuses a type no live worker has registered."""

from __future__ import annotations

import textwrap
from pathlib import Path

import httpx

HANDLERS = """
from tickwheel import App

app = App()


@app.task("greet")
async def greet(ctx, payload):
    pass
"""


def test_a_fresh_strict_server_knows_its_own_types(tickwheel_factory: type, tmp_path: Path) -> None:
    (tmp_path / "greeting.py").write_text(textwrap.dedent(HANDLERS))
    tw = tickwheel_factory.start(app="greeting", extra_env={"TICKWHEEL_STRICT_TASK_TYPES": "1"})

    greet = httpx.post(f"{tw.url}/api/tasks", json={"task_type": "greet"}, timeout=10)
    assert greet.status_code == 201 and greet.json()["warnings"] == []
    refused = httpx.post(f"{tw.url}/api/tasks", json={"task_type": "gret"}, timeout=10)
    assert refused.status_code == 422
    assert refused.json()["field"] == "task_type" and "'gret'" in refused.json()["message"]
