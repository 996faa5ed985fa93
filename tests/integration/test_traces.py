"""Traces: with tracing on, one task's submission, trigger, claim and run are spans of
the trace of the request that submitted it, exported to an in-memory exporter; the run
span is current in the handler and sent on by `http` tasks. Off, nothing is traced."""

from __future__ import annotations

import asyncio
import contextlib
import time
from collections.abc import AsyncIterator, Iterator
from http.server import BaseHTTPRequestHandler, HTTPServer
from pathlib import Path
from threading import Thread
from typing import Any, ClassVar

import httpx
import pytest
from opentelemetry import trace
from opentelemetry.sdk.trace import ReadableSpan, TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from services import fresh_schema, require

from tickwheel.api.app import create_app
from tickwheel.config import Settings
from tickwheel.node import Node
from tickwheel.worker.context import TaskContext
from tickwheel.worker.registry import App

TRACE_ID = "4bf92f3577b34da6a3ce929d0e0e4736"
PARENT_ID = "00f067aa0ba902b7"
TRACEPARENT = f"00-{TRACE_ID}-{PARENT_ID}-01"
FOUR = {"tickwheel.submit", "tickwheel.trigger", "tickwheel.claim", "tickwheel.run"}


@pytest.fixture(scope="module")
def exporter() -> InMemorySpanExporter:
    """The process's tracer provider, set once: spans go to memory."""
    found = InMemorySpanExporter()
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(found))
    trace.set_tracer_provider(provider)
    return found


class Seen:
    def __init__(self) -> None:
        self.traceparents: list[str | None] = []
        self.current: list[str] = []  # the span id current in the handler, as hex


@pytest.fixture
def seen() -> Seen:
    return Seen()


def traced_app(seen: Seen) -> App:
    app = App()

    @app.task("traced")
    async def traced(ctx: TaskContext, payload: Any) -> None:
        seen.traceparents.append(ctx.traceparent)
        seen.current.append(f"{trace.get_current_span().get_span_context().span_id:016x}")

    return app


async def api_of(node: Node) -> httpx.AsyncClient:
    transport = httpx.ASGITransport(app=create_app(node, manage_node=False))
    return httpx.AsyncClient(transport=transport, base_url="http://tickwheel")


@pytest.fixture(params=["embedded", "distributed"])
async def traced_api(
    request: pytest.FixtureRequest,
    tmp_path: Path,
    seen: Seen,
    exporter: InMemorySpanExporter,
    redis_prefix: str,
) -> AsyncIterator[httpx.AsyncClient]:
    """Every role in this process, on SQLite, or on PostgreSQL (a fresh schema) and
    Redis (a fresh prefix): the spans come from the same code either way."""
    exporter.clear()
    async with contextlib.AsyncExitStack() as stack:
        if request.param == "embedded":
            stores = {"database_url": f"sqlite:///{tmp_path / 't.db'}"}
        else:
            url = await stack.enter_async_context(fresh_schema())
            stores = {"database_url": url, "redis_url": require("redis")}
        settings = Settings(**stores, redis_prefix=redis_prefix, tracing=True)
        node = await stack.enter_async_context(Node(settings=settings, app=traced_app(seen)))
        yield await stack.enter_async_context(await api_of(node))


async def finished(api: httpx.AsyncClient, task_id: str) -> dict[str, Any]:
    deadline = time.monotonic() + 10
    while (task := (await api.get(f"/api/tasks/{task_id}")).json())["status"] != "succeeded":
        assert time.monotonic() < deadline, task
        await asyncio.sleep(0.05)
    return task


def spans_of(exporter: InMemorySpanExporter, names: set[str]) -> list[ReadableSpan]:
    return [s for s in exporter.get_finished_spans() if s.name in names]


def root_of(exporter: InMemorySpanExporter, span: ReadableSpan) -> ReadableSpan:
    """The first span of `span`'s ancestors made in this process."""
    by_id = {s.context.span_id: s for s in exporter.get_finished_spans()}
    while span.parent is not None and span.parent.span_id in by_id:
        span = by_id[span.parent.span_id]
    return span


async def at_least(
    exporter: InMemorySpanExporter, names: set[str], count: int
) -> list[ReadableSpan]:
    """The spans of `names`, once there are `count` (the trigger's are made in the
    background, after the task may have run)."""
    deadline = time.monotonic() + 5
    while len(found := spans_of(exporter, names)) < count:
        assert time.monotonic() < deadline, [s.name for s in found]
        await asyncio.sleep(0.05)
    return found


async def four_spans(exporter: InMemorySpanExporter) -> dict[str, ReadableSpan]:
    return {s.name: s for s in await at_least(exporter, FOUR, len(FOUR))}


@pytest.mark.parametrize(
    "schedule", [{"type": "immediate"}, {"type": "delayed", "delay_seconds": 0.3}]
)
async def test_a_tasks_four_spans_join_the_submitting_requests_trace(
    traced_api: httpx.AsyncClient,
    exporter: InMemorySpanExporter,
    seen: Seen,
    schedule: dict[str, Any],
) -> None:
    body = {"task_type": "traced", "schedule": schedule}
    made = await traced_api.post("/api/tasks", json=body, headers={"traceparent": TRACEPARENT})
    assert made.status_code == 201, made.text
    task = await finished(traced_api, made.json()["task_id"])

    spans = await four_spans(exporter)
    assert {f"{s.context.trace_id:032x}" for s in spans.values()} == {TRACE_ID}
    submit = spans["tickwheel.submit"]
    caller = root_of(exporter, submit).parent  # FastAPI's own spans may come between
    assert caller is not None and f"{caller.span_id:016x}" == PARENT_ID
    for name in ("tickwheel.trigger", "tickwheel.claim", "tickwheel.run"):
        parent = spans[name].parent
        assert parent is not None and parent.span_id == submit.context.span_id, name
    run = spans["tickwheel.run"]
    assert run.attributes is not None and run.attributes["tickwheel.task_id"] == task["task_id"]
    # In order: submitted, triggered at its due time, claimed once released, then run.
    trigger, claim = spans["tickwheel.trigger"], spans["tickwheel.claim"]
    assert trigger.end_time is not None and claim.start_time is not None
    assert trigger.end_time <= claim.start_time + 1_000_000  # ms precision
    assert claim.end_time is not None and run.start_time is not None
    assert claim.end_time <= run.start_time + 1_000_000
    # The handler ran inside the run's span, and was handed its context.
    run_id = f"{run.context.span_id:016x}"
    assert seen.current == [run_id]
    assert seen.traceparents == [f"00-{TRACE_ID}-{run_id}-01"]


async def test_a_batch_is_one_submit_span_and_each_task_joins_it(
    traced_api: httpx.AsyncClient, exporter: InMemorySpanExporter
) -> None:
    tasks = [{"task_type": "traced"}] * 3
    made = await traced_api.post("/api/tasks/batch", json={"tasks": tasks})
    assert made.status_code == 201, made.text
    for submitted in made.json()["tasks"]:
        await finished(traced_api, submitted["task_id"])
    runs = await at_least(exporter, {"tickwheel.run"}, 3)
    (submit,) = spans_of(exporter, {"tickwheel.submit"})
    assert root_of(exporter, submit).parent is None  # no traceparent came: a new trace
    assert {r.context.trace_id for r in runs} == {submit.context.trace_id}


class Headers(BaseHTTPRequestHandler):
    received: ClassVar[list[str | None]] = []

    def do_POST(self) -> None:
        self.received.append(self.headers.get("traceparent"))
        self.send_response(204)
        self.end_headers()

    def log_message(self, *args: object) -> None:
        pass


@pytest.fixture
def target() -> Iterator[str]:
    server = HTTPServer(("127.0.0.1", 0), Headers)
    Thread(target=server.serve_forever, daemon=True).start()
    Headers.received = []
    yield f"http://127.0.0.1:{server.server_address[1]}/hook"
    server.shutdown()
    server.server_close()


async def test_a_workflows_tasks_join_the_submitting_requests_trace(
    traced_api: httpx.AsyncClient, exporter: InMemorySpanExporter
) -> None:
    flow = {
        "name": "traced-flow",
        "tasks": [
            {"name": "a", "task_type": "traced"},
            {"name": "b", "task_type": "traced", "dependencies": ["a"]},
        ],
    }
    made = await traced_api.post("/api/workflows", json=flow, headers={"traceparent": TRACEPARENT})
    assert made.status_code == 201, made.text
    for task in made.json()["tasks"]:
        await finished(traced_api, task["task_id"])
    runs = await at_least(exporter, {"tickwheel.run"}, 2)
    assert {f"{r.context.trace_id:032x}" for r in runs} == {TRACE_ID}


async def test_an_http_task_sends_its_runs_context_on(
    traced_api: httpx.AsyncClient, exporter: InMemorySpanExporter, target: str
) -> None:
    body = {"task_type": "http", "payload": {"url": target}}
    made = await traced_api.post("/api/tasks", json=body, headers={"traceparent": TRACEPARENT})
    assert made.status_code == 201, made.text
    await finished(traced_api, made.json()["task_id"])
    run = (await four_spans(exporter))["tickwheel.run"]
    assert Headers.received == [f"00-{TRACE_ID}-{run.context.span_id:016x}-01"]


async def test_off_by_default_nothing_is_traced_or_carried(
    tmp_path: Path, seen: Seen, exporter: InMemorySpanExporter
) -> None:
    exporter.clear()
    settings = Settings(database_url=f"sqlite:///{tmp_path / 'off.db'}")
    async with Node(settings=settings, app=traced_app(seen)) as node, await api_of(node) as api:
        made = await api.post(
            "/api/tasks", json={"task_type": "traced"}, headers={"traceparent": TRACEPARENT}
        )
        await finished(api, made.json()["task_id"])
        record = await node.store.get_task(made.json()["task_id"])
        assert record is not None and record.traceparent is None
    assert seen.traceparents == [None]
    assert exporter.get_finished_spans() == ()  # FastAPI's own spans are off too
