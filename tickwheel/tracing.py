"""Traces of a task's life, through OpenTelemetry: one trace per submitting request.

With tracing on (`--tracing`, the `tickwheel[otel]` extra), the API opens a
`tickwheel.submit` span as a child of the request's W3C `traceparent` (a new trace when
it has none) and stores that span's context on each task it submits. Every later span
of the task is a child of it: `tickwheel.trigger` (from its due time to its release to
the ready queue, by the scheduler, or by the API for a task due now), `tickwheel.claim`
(from its release to the worker's claim) and `tickwheel.run` (its handler, current while
the handler runs, so the handler's own spans nest under it; handlers read its context
as `ctx.traceparent`, and `http` tasks send it as a `traceparent` header).

Off, the default, costs nothing: OpenTelemetry is not imported, tasks carry no trace
context (a null column), and each hook is one attribute test on the hot paths.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Awaitable, Callable, Collection, Iterator, Sequence
from typing import TYPE_CHECKING, Any

from tickwheel.extras import OTEL, require
from tickwheel.models import ClaimedTask
from tickwheel.queue.base import ReadyItem

if TYPE_CHECKING:
    from opentelemetry.context import Context
    from opentelemetry.trace import Span, Tracer

log = logging.getLogger(__name__)

Lookup = Callable[[Collection[int]], Awaitable[dict[int, str]]]  # seq -> traceparent
MS = 1_000_000  # ns in a ms: OpenTelemetry's times are ns since the epoch


class Tracing:
    """Tracing off: every hook does nothing. `enabled` lets a hot path skip the work
    of preparing a hook's arguments."""

    enabled = False

    @contextlib.contextmanager
    def submission(self, traceparent: str | None, tasks: int) -> Iterator[str | None]:
        """Around a submission of `tasks` tasks; yields the context they carry."""
        yield None

    def released(self, items: Sequence[ReadyItem]) -> None:
        """Tasks handed to the ready queue (each span needs its task's context, read
        from the store in the background)."""

    def claimed(self, tasks: Sequence[ClaimedTask], items: Sequence[ReadyItem]) -> None:
        """Tasks a worker claimed, from the items it pulled."""

    @contextlib.contextmanager
    def running(self, task: ClaimedTask) -> Iterator[str | None]:
        """Around a task's handler; yields the context to hand it."""
        yield None

    async def close(self) -> None:
        """Wait for the spans still being made in the background."""


OFF = Tracing()


class OtelTracing(Tracing):
    enabled = True

    def __init__(self, lookup: Lookup, now_ms: Callable[[], int]) -> None:
        require(OTEL)
        from opentelemetry import trace
        from opentelemetry.trace.propagation.tracecontext import TraceContextTextMapPropagator

        self._trace = trace
        self._tracer: Tracer = trace.get_tracer("tickwheel")
        self._propagator = TraceContextTextMapPropagator()
        self._lookup = lookup
        self._now_ms = now_ms
        self._pending: set[asyncio.Task[None]] = set()

    @contextlib.contextmanager
    def submission(self, traceparent: str | None, tasks: int) -> Iterator[str | None]:
        from opentelemetry.trace import SpanKind

        attributes = {"tickwheel.tasks": tasks}
        if self._trace.get_current_span().get_span_context().is_valid:
            # The server is instrumented (FastAPI's spans, say): its request span took
            # the header already, and the submission is part of it.
            parent, kind = None, SpanKind.INTERNAL
        else:
            parent, kind = self._context(traceparent), SpanKind.SERVER
        with self._tracer.start_as_current_span(
            "tickwheel.submit", context=parent, kind=kind, attributes=attributes
        ) as span:
            yield self._header(span)

    def released(self, items: Sequence[ReadyItem]) -> None:
        task = asyncio.get_running_loop().create_task(self._trigger_spans(list(items)))
        self._pending.add(task)
        task.add_done_callback(self._pending.discard)

    async def _trigger_spans(self, items: list[ReadyItem]) -> None:
        try:
            carried = await self._lookup([i.seq for i in items])
        except Exception as error:  # a store outage is told by the store's own health
            log.debug("trigger spans of %d tasks were not made: %s", len(items), error)
            return
        for item in items:
            traceparent = carried.get(item.seq)
            if traceparent is not None:
                self._span(
                    "tickwheel.trigger",
                    traceparent,
                    item.due_ms,
                    item.triggered_ms,
                    {"tickwheel.seq": item.seq, "tickwheel.queue": item.queue},
                )

    def claimed(self, tasks: Sequence[ClaimedTask], items: Sequence[ReadyItem]) -> None:
        released = {i.seq: i.triggered_ms for i in items}
        now = self._now_ms()
        for task in tasks:
            if task.traceparent is not None:
                attributes = {"tickwheel.task_id": task.task_id, "tickwheel.attempt": task.attempt}
                start = released.get(task.seq, now)
                self._span("tickwheel.claim", task.traceparent, start, now, attributes)

    @contextlib.contextmanager
    def running(self, task: ClaimedTask) -> Iterator[str | None]:
        if task.traceparent is None:
            yield None
            return
        attributes: dict[str, Any] = {
            "tickwheel.task_id": task.task_id,
            "tickwheel.task_type": task.task_type,
            "tickwheel.attempt": task.attempt,
        }
        with self._tracer.start_as_current_span(
            "tickwheel.run", context=self._context(task.traceparent), attributes=attributes
        ) as span:
            yield self._header(span)

    async def close(self) -> None:
        await asyncio.gather(*self._pending, return_exceptions=True)

    def _span(
        self, name: str, traceparent: str, start_ms: int, end_ms: int, attributes: dict[str, Any]
    ) -> None:
        span = self._tracer.start_span(
            name,
            context=self._context(traceparent),
            start_time=start_ms * MS,
            attributes=attributes,
        )
        span.end(end_time=max(start_ms, end_ms) * MS)

    def _context(self, traceparent: str | None) -> Context | None:
        if traceparent is None:
            return None
        return self._propagator.extract({"traceparent": traceparent})

    def _header(self, span: Span) -> str | None:
        carrier: dict[str, str] = {}
        self._propagator.inject(carrier, context=self._trace.set_span_in_context(span))
        return carrier.get("traceparent")


def tracing_for(enabled: bool, lookup: Lookup, now_ms: Callable[[], int]) -> Tracing:
    return OtelTracing(lookup, now_ms) if enabled else OFF


def export_over_otlp(service: str) -> None:
    """Give this process an SDK tracer provider that exports over OTLP (the standard
    `OTEL_EXPORTER_OTLP_*` variables say where), unless the program set one already."""
    require(OTEL)
    from opentelemetry import trace
    from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter
    from opentelemetry.sdk.resources import Resource
    from opentelemetry.sdk.trace import TracerProvider
    from opentelemetry.sdk.trace.export import BatchSpanProcessor

    if not isinstance(trace.get_tracer_provider(), trace.ProxyTracerProvider):
        return  # configured by the program (or by opentelemetry-instrument)
    provider = TracerProvider(resource=Resource.create({"service.name": service}))
    provider.add_span_processor(BatchSpanProcessor(OTLPSpanExporter()))
    trace.set_tracer_provider(provider)
