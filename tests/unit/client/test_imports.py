"""A program that only uses the client loads none of the server (timings: bench/)."""

from __future__ import annotations

import json
import subprocess
import sys

import tickwheel

SERVER_SIDE = {"fastapi", "starlette", "pydantic", "asyncpg", "redis", "uvicorn", "aiohttp"}
SERVER_MODULES = (
    "tickwheel.node",
    "tickwheel.api",
    "tickwheel.engine",
    "tickwheel.worker",
    "tickwheel.storage",
    "tickwheel.queue",
    "tickwheel.wire.requests",
)


def loaded_after(code: str) -> list[str]:
    """The server's modules (and the engine's, and the API's) loaded by `code`."""
    probe = (
        f"import sys, json\n{code}\n"
        "print(json.dumps(sorted(m for m in sys.modules if m.split('.')[0] in "
        f"{sorted(SERVER_SIDE)!r} or m.startswith({SERVER_MODULES!r}))))"
    )
    run = subprocess.run([sys.executable, "-c", probe], capture_output=True, check=True)
    return list(json.loads(run.stdout))


def test_the_client_loads_no_server_module() -> None:
    assert loaded_after("import tickwheel; tickwheel.Client; tickwheel.AsyncClient") == []
    assert loaded_after("from tickwheel import AsyncClient, Client, Status, Unreachable") == []


def test_the_server_names_are_there_when_asked_for() -> None:
    assert "tickwheel.node" in loaded_after("from tickwheel import Node")
    assert set(tickwheel.__all__) <= set(dir(tickwheel))
    for name in tickwheel.__all__:
        assert getattr(tickwheel, name).__name__ == name
