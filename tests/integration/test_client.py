"""`AsyncClient` and `Client` against the real API and engine (in process, served by
uvicorn on a loopback port): every route, retries that never make a second task, and
typed errors."""

from __future__ import annotations

import asyncio
import socket
import uuid
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import AsyncExitStack, asynccontextmanager
from dataclasses import replace
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest
import uvicorn

from tickwheel import (
    AsyncClient,
    Client,
    Conflict,
    Forbidden,
    IdempotencyConflict,
    InvalidBatch,
    InvalidRequest,
    Overloaded,
    StaleFence,
    TaskNotFound,
    Unauthorized,
    Unreachable,
    Workflow,
)
from tickwheel.api.app import create_app
from tickwheel.api.auth import new_token, token_hash
from tickwheel.client import NO_RETRIES, Retries, task_body
from tickwheel.config import Settings
from tickwheel.core.retry import RetryPolicy
from tickwheel.models import Status
from tickwheel.node import Node
from tickwheel.storage.base import TaskFilter

ONE_RETRY = Retries(RetryPolicy(max_retries=1, base_seconds=0.01, max_seconds=0.01))
KEEP_ALIVE_SECONDS = 0.5  # the server closes a connection idle this long


@asynccontextmanager
async def serving(node: Node) -> AsyncIterator[str]:
    """`node`'s API on a free loopback port, in this event loop; yields its URL."""
    app = create_app(node, manage_node=False)
    config = uvicorn.Config(
        app, log_level="warning", lifespan="off", timeout_keep_alive=KEEP_ALIVE_SECONDS
    )
    server = uvicorn.Server(config)
    listener = socket.socket()
    listener.bind(("127.0.0.1", 0))
    serve = asyncio.create_task(server.serve(sockets=[listener]))
    while not server.started:
        await asyncio.sleep(0.01)
    try:
        yield f"http://127.0.0.1:{listener.getsockname()[1]}"
    finally:
        server.should_exit = True
        await serve


class Flaky:
    """A network between a client and the server that can lose answers: a proxy that
    cuts the connection instead of passing on `lose` answers (their requests were
    handled), and counts every request."""

    def __init__(self, server_url: str, *, lose: int = 0) -> None:
        self._upstream = int(server_url.rsplit(":", 1)[1])
        self.lose = lose
        self.requests: list[str] = []
        self.url = ""
        self._server: asyncio.Server | None = None

    async def __aenter__(self) -> Flaky:
        self._server = await asyncio.start_server(self._relay, "127.0.0.1", 0)
        self.url = f"http://127.0.0.1:{self._server.sockets[0].getsockname()[1]}"
        return self

    async def __aexit__(self, *exc_info: object) -> None:
        if self._server is not None:
            self._server.close()
            await self._server.wait_closed()

    async def _relay(self, client: asyncio.StreamReader, to_client: asyncio.StreamWriter) -> None:
        server, to_server = await asyncio.open_connection("127.0.0.1", self._upstream)
        try:
            while True:
                request = await _message(client)
                method, target = request.split(b" ", 2)[:2]
                self.requests.append(f"{method.decode()} {target.decode().split('?')[0]}")
                to_server.write(request)
                answer = await _message(server)
                if self.lose > 0:
                    self.lose -= 1
                    return  # the answer is lost: the client sees the connection end
                to_client.write(answer)
                await to_client.drain()
        except (asyncio.IncompleteReadError, ConnectionError):
            pass  # either end went away
        finally:
            to_server.close()
            to_client.close()


async def _message(reader: asyncio.StreamReader) -> bytes:
    """One HTTP/1.1 request or answer, head and body (the API always sends a length)."""
    head = await reader.readuntil(b"\r\n\r\n")
    length = 0
    for line in head.split(b"\r\n")[1:]:
        name, _, value = line.partition(b":")
        if name.strip().lower() == b"content-length":
            length = int(value)
        assert name.strip().lower() != b"transfer-encoding", "the proxy reads lengths only"
    return head + await reader.readexactly(length)


ClientFactory = Callable[..., Awaitable[tuple[AsyncClient, Flaky]]]


@pytest.fixture
async def served(node: Node) -> AsyncIterator[str]:
    async with serving(node) as url:
        yield url


@pytest.fixture
async def connect(served: str) -> AsyncIterator[ClientFactory]:
    """Clients of `node`'s API, each over its own `Flaky` network."""
    async with AsyncExitStack() as opened:

        async def open_client(*, lose: int = 0, **options: object) -> tuple[AsyncClient, Flaky]:
            network = await opened.enter_async_context(Flaky(served, lose=lose))
            client = AsyncClient(network.url, **options)  # type: ignore[arg-type]
            return await opened.enter_async_context(client), network

        yield open_client


async def test_submit_wait_and_read(connect: ClientFactory) -> None:
    client, _ = await connect()
    submitted = await client.submit("noop", {"n": 1}, max_retries=2, priority=5)
    assert submitted.status == "pending" and not submitted.duplicate
    done = await client.wait(submitted.task_id, timeout_seconds=10)
    assert done.status == "succeeded"
    assert (done.payload, done.max_retries, done.priority) == ({"n": 1}, 2, 5)
    assert done.idempotency_key is None  # the client named the task instead (UUIDv7)
    assert uuid.UUID(submitted.task_id).version == 7
    (execution,) = (await client.history(submitted.task_id)).executions
    assert execution.outcome == "succeeded"
    assert (await client.health()).ok
    assert (await client.queues()).admitting


async def test_a_lost_answer_is_retried_without_a_second_task(connect: ClientFactory) -> None:
    client, network = await connect(lose=1)
    later = datetime.now(UTC) + timedelta(hours=1)
    submitted = await client.submit("noop", {"order": 7}, due_time=later)
    assert network.requests == ["POST /api/tasks"] * 2
    assert submitted.duplicate  # the second try found the task the first one made
    tasks = [t async for t in client.iter_tasks()]
    assert [t.task_id for t in tasks] == [submitted.task_id]


async def test_a_lost_batch_answer_is_retried_without_second_tasks(
    connect: ClientFactory,
) -> None:
    client, network = await connect(lose=1)
    bodies = [task_body("noop", {"i": i}, delay_seconds=3600) for i in range(50)]
    submitted = await client.submit_many(bodies)
    assert len(network.requests) == 2
    assert all(s.duplicate for s in submitted)
    assert len([t async for t in client.iter_tasks(page_size=7)]) == 50


async def test_each_submission_without_a_key_is_a_new_task(connect: ClientFactory) -> None:
    client, _ = await connect()
    first = await client.submit("noop", delay_seconds=60)
    second = await client.submit("noop", delay_seconds=60)
    assert first.task_id != second.task_id
    again = await client.submit("noop", delay_seconds=60, idempotency_key="mine")
    same = await client.submit("noop", delay_seconds=60, idempotency_key="mine")
    assert same.task_id == again.task_id and same.duplicate


async def test_a_claim_is_not_repeated_after_a_lost_answer(connect: ClientFactory) -> None:
    """Tasks claimed in a lost answer wait out their lease; claiming again could not
    give them back, so the client does not hide the loss."""
    client, network = await connect(lose=1)
    with pytest.raises(Unreachable):
        await client.claim("w1", wait_seconds=0)
    assert network.requests == ["POST /api/worker/claim"]


async def test_errors_are_typed(connect: ClientFactory) -> None:
    client, _ = await connect(retries=ONE_RETRY)
    with pytest.raises(TaskNotFound):
        await client.get("no-such-task")
    with pytest.raises(InvalidRequest) as invalid:
        await client.submit("noop", due_time=datetime(2030, 1, 1))  # no time zone
    assert invalid.value.field == "schedule.due_time"
    with pytest.raises(InvalidBatch) as batch:
        await client.submit_many([task_body("noop"), task_body("noop", priority=500)])
    assert [(i, p.field) for i, p in batch.value.problems] == [(1, "priority")]
    with pytest.raises(InvalidRequest) as bad_name:
        await client.get("..")
    assert bad_name.value.field == "task_id"

    first = await client.submit("noop", {"v": 1}, delay_seconds=60, idempotency_key="k")
    with pytest.raises(IdempotencyConflict) as conflict:
        await client.submit("noop", {"v": 2}, delay_seconds=60, idempotency_key="k")
    assert conflict.value.task_id == first.task_id
    done = await client.submit("noop")
    await client.wait(done.task_id, timeout_seconds=10)
    with pytest.raises(Conflict):
        await client.cancel(done.task_id)
    assert (await client.cancel(first.task_id)).cancelled_instances == 1
    assert (await client.cancel(first.task_id)).cancelled_instances == 0  # safe to repeat
    cancelled = [t.task_id async for t in client.iter_tasks(Status.CANCELLED)]
    assert cancelled == [first.task_id]


async def test_tokens_and_scopes_are_typed_errors(node: Node, connect: ClientFactory) -> None:
    reader = new_token()
    await node.store.create_token(
        "t1", token_hash(reader), name="reader", scopes=frozenset({"read"}), now_ms=0
    )
    anonymous, _ = await connect(token="")
    with pytest.raises(Unauthorized):
        await anonymous.list_tasks()
    client, _ = await connect(token=reader + "\n")  # as read from a file: stripped
    assert (await client.list_tasks()).tasks == []
    with pytest.raises(Forbidden):
        await client.submit("noop")
    with pytest.raises(ValueError, match="control"):
        await connect(token="tw_a\nX-Injected: 1")

    assert await node.store.revoke_token("t1", now_ms=1)
    await asyncio.sleep(1.1)  # the server re-reads tokens every second
    with pytest.raises(Unauthorized):  # revoking every token does not open the API
        await anonymous.list_tasks()


async def test_a_task_id_cannot_reach_another_task_or_route(connect: ClientFactory) -> None:
    client, _ = await connect()
    task = await client.submit("noop", delay_seconds=3600)
    for forged in (f"{task.task_id}?x=1", f"{task.task_id}#y", f"{task.task_id}%2Fhistory"):
        with pytest.raises(TaskNotFound):
            await client.cancel(forged)
    with pytest.raises(InvalidRequest):
        await client.cancel(f"{task.task_id}/history")
    assert (await client.get(task.task_id)).status == "pending"


async def test_iter_tasks_keeps_its_filter_on_every_page(connect: ClientFactory) -> None:
    client, _ = await connect()
    bodies = [task_body("noop", delay_seconds=3600) for _ in range(12)]
    cancelled = [s.task_id for s in await client.submit_many(bodies)][:5]
    for task_id in cancelled:
        await client.cancel(task_id)
    wanted = (s for s in ["cancelled"])  # an iterator: read once, used for every page
    found = [t.task_id async for t in client.iter_tasks(wanted, page_size=2)]
    assert sorted(found) == sorted(cancelled)


async def test_node_submit_checks_its_options_like_the_api(node: Node) -> None:
    cases = {
        "max_retries": {"max_retries": 500},
        "retry_backoff": {"retry_backoff": (0.0, 0.0)},
        "timeout_seconds": {"timeout_seconds": -1.0},
        "delay_seconds": {"delay_seconds": float("nan")},
        "jitter_seconds": {"cron": "@daily", "jitter_seconds": -5},
        "priority": {"priority": 101},
        "due_time": {"due_time": datetime(2030, 1, 1)},
        "misfire_policy": {"cron": "@daily", "misfire_policy": "sometimes"},
        "cron": {"cron": "61 * * * *"},
    }
    for field, options in cases.items():
        with pytest.raises(InvalidRequest) as invalid:
            await node.submit("noop", **options)  # type: ignore[arg-type]
        assert invalid.value.field == field
    with pytest.raises(TypeError, match="delay"):
        await node.submit("noop", delay=5)  # type: ignore[call-arg]
    assert (await node.service.list_tasks(TaskFilter(), before_seq=None, limit=10))[0] == []


async def test_operations(connect: ClientFactory, node: Node) -> None:
    client, _ = await connect()
    failing = await client.submit("noop", delay_seconds=3600, max_retries=0)
    with pytest.raises(TaskNotFound):
        await client.pause(failing.task_id)  # not a recurring task
    changed = await client.set_priority(failing.task_id, 42)
    assert changed.priority == 42

    nightly = await client.submit("noop", cron="0 3 * * *", timezone="Europe/Paris")
    assert nightly.schedule_id == nightly.task_id
    paused = await client.pause(nightly.task_id)
    assert paused.schedule.schedule_status == "paused"
    resumed = await client.resume(nightly.task_id)
    assert resumed.schedule.schedule_status == "active" and resumed.status == "pending"
    assert (await client.resume(nightly.task_id)).current_instance_id == (
        resumed.current_instance_id
    )
    redriven = await client.redrive([failing.task_id, "unknown"])
    assert redriven.redriven == []
    assert {s.task_id for s in redriven.skipped} == {failing.task_id, "unknown"}


@pytest.fixture
async def bare_node(tmp_path: Path) -> AsyncIterator[Node]:
    """No worker of its own, and admission that refuses once 3 tasks are waiting."""
    settings = Settings(
        database_url=f"sqlite:///{tmp_path / 'bare.db'}", lease_seconds=5, max_ready_depth=3
    )
    async with Node(settings=settings, run_worker=False) as started:
        yield started


async def test_the_worker_protocol(bare_node: Node) -> None:
    async with serving(bare_node) as url, AsyncClient(url) as client:
        ok, bad = await client.submit("resize"), await client.submit("resize", max_retries=0)
        claimed = []
        while len(claimed) < 2:
            claimed += await client.claim("w1", queues=["default"], max_tasks=2, wait_seconds=5)
        fences = {t.task_id: t.fence for t in claimed}
        assert (await client.heartbeat(ok.task_id, fences[ok.task_id])).task_id == ok.task_id
        assert (await client.complete(ok.task_id, fences[ok.task_id])).status == "succeeded"
        # A repeat whose first answer was lost gets the same answer.
        assert (await client.complete(ok.task_id, fences[ok.task_id])).status == "succeeded"
        end = await client.fail(bad.task_id, fences[bad.task_id], "boom", retryable=False)
        assert end.status == "failed"
        with pytest.raises(StaleFence):
            await client.heartbeat(ok.task_id, fences[ok.task_id])
        assert [t.task_id async for t in client.iter_tasks("failed")] == [bad.task_id]
        assert (await client.redrive([bad.task_id])).redriven == [bad.task_id]
        assert (await client.get(bad.task_id)).status in ("pending", "ready")


async def test_overload_is_raised_with_the_servers_retry_after(bare_node: Node) -> None:
    """With nothing draining, the server asks for more patience (60 s) than this client
    has (5 s): it raises at once instead of waiting (see tests/unit/client for waits)."""
    retries = replace(ONE_RETRY, max_retry_after_seconds=5)
    async with (
        serving(bare_node) as url,
        Flaky(url) as network,
        AsyncClient(network.url, retries=retries) as client,
    ):
        for _ in range(4):
            await client.submit("noop")
        while (await client.queues()).backlog < 4:
            await asyncio.sleep(0.05)
        network.requests.clear()
        with pytest.raises(Overloaded) as overloaded:
            await client.submit("noop")
        assert network.requests == ["POST /api/tasks"]
        assert overloaded.value.retry_after_seconds == 60
        assert (await client.queues()).admitting is False  # reads still work


async def test_workflows_through_the_client_survive_a_lost_answer(connect: ClientFactory) -> None:
    client, network = await connect(lose=1)
    flow = Workflow("etl")
    first = flow.task("first", "noop", {"step": 1})
    flow.task("second", "noop", {"step": 2}, after=[first], max_retries=1)
    flow.task("later", "noop", after=[first], delay_seconds=3600)

    submitted = await client.submit_workflow(flow)
    assert network.requests == ["POST /api/workflows"] * 2  # one store, found again
    assert [t.name for t in submitted.tasks] == ["first", "second", "later"]
    assert submitted.tasks[1].dependencies == ["first"]
    assert len([t async for t in client.iter_tasks()]) == 3

    cancelled = await client.cancel_workflow(submitted.workflow_id)
    assert cancelled.cancelled >= 1
    shown = await client.get_workflow(submitted.workflow_id)
    assert shown.status in ("cancelled", "failed")  # whatever had not finished is cancelled
    assert {t.status for t in shown.tasks if t.name == "later"} == {"cancelled"}

    schedule = await client.schedule_workflow(flow, "0 3 * * *", timezone="Europe/Paris")
    task = await client.get(schedule.task_id)
    assert task.schedule.cron_expression == "0 3 * * *"
    assert task.schedule.timezone == "Europe/Paris"
    with pytest.raises(TaskNotFound):
        await client.get_workflow("no-such-workflow")


async def test_the_blocking_client_survives_a_lost_answer(served: str) -> None:
    """`Client` (run on a thread beside the server's event loop): the same retries and
    errors over its own transport."""
    async with Flaky(served, lose=1) as network:
        with Client(network.url, retries=ONE_RETRY) as client:
            submitted = await asyncio.to_thread(client.submit, "noop", {"n": 1}, priority=5)
            assert network.requests == ["POST /api/tasks"] * 2
            assert submitted.duplicate
            done = await asyncio.to_thread(client.wait, submitted.task_id, timeout_seconds=10)
            assert (done.status, done.payload, done.priority) == ("succeeded", {"n": 1}, 5)
            network.lose = 1
            with pytest.raises(Unreachable):  # a claim is never repeated
                await asyncio.to_thread(client.claim, "w1")
            with pytest.raises(TaskNotFound):
                await asyncio.to_thread(client.get, "no-such-task")
            with pytest.raises(InvalidBatch):
                await asyncio.to_thread(client.submit_many, [task_body("noop", priority=500)])
            (page, _) = await asyncio.gather(
                asyncio.to_thread(client.list_tasks, ["succeeded"], limit=5),
                asyncio.to_thread(client.health),  # two threads share one client
            )
            assert [t.task_id for t in page.tasks] == [submitted.task_id]


async def test_a_connection_the_server_closed_while_idle_is_not_reused(served: str) -> None:
    """Without retries, so that a stale connection would fail the second call."""
    with Client(served, retries=NO_RETRIES) as client:
        assert (await asyncio.to_thread(client.health)).ok
        await asyncio.sleep(KEEP_ALIVE_SECONDS * 3)
        assert (await asyncio.to_thread(client.health)).ok
    async with AsyncClient(served, retries=NO_RETRIES) as async_client:
        assert (await async_client.health()).ok
        await asyncio.sleep(KEEP_ALIVE_SECONDS * 3)
        assert (await async_client.health()).ok


async def test_a_server_not_listening_is_unreachable() -> None:
    with socket.socket() as unused:
        unused.bind(("127.0.0.1", 0))
        url = f"http://127.0.0.1:{unused.getsockname()[1]}"
    with Client(url, retries=ONE_RETRY) as client, pytest.raises(Unreachable) as blocking:
        await asyncio.to_thread(client.claim, "w1")  # never sent: tried again all the same
    async with AsyncClient(url, retries=ONE_RETRY) as async_client:
        with pytest.raises(Unreachable) as awaiting:
            await async_client.claim("w1")
    for error in (blocking.value, awaiting.value):
        assert str(error).startswith(f"POST {url}/api/worker/claim: ")
