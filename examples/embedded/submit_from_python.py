"""Run Tickwheel inside your own program and submit from Python.

    .venv/bin/python examples/embedded/submit_from_python.py
"""

from __future__ import annotations

import asyncio
import tempfile
from pathlib import Path

from tickwheel import Node, Settings, Status

from handlers import app  # the handlers beside this file


async def main() -> None:
    database = Path(tempfile.mkdtemp()) / "demo.db"
    async with Node(settings=Settings(database_url=f"sqlite:///{database}"), app=app) as node:
        now = await node.submit("greet", {"name": "Ada"})
        later = await node.submit("greet", {"name": "Grace"}, delay_seconds=1)
        for submitted in (now, later):
            while (view := await node.service.get(submitted.task_id)).status is not Status.SUCCEEDED:
                await asyncio.sleep(0.05)
            print(submitted.task_id, view.status)


if __name__ == "__main__":
    asyncio.run(main())
