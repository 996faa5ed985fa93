"""Python clients of a Tickwheel server's HTTP API, blocking and asyncio."""

from tickwheel.client.aio import AsyncClient
from tickwheel.client.retries import NO_RETRIES, Retries
from tickwheel.client.sync import Client
from tickwheel.wire.bodies import task_body

__all__ = ["NO_RETRIES", "AsyncClient", "Client", "Retries", "task_body"]
