"""What the live dashboard reads every second (`/api/stats`), and the Prometheus scrape.

Counts per status come from the store, for the whole cluster; a query over a million
tasks is not free, so the API keeps the answer for `COUNTS_CACHE_SECONDS` and many
viewers cost one query. The series and lateness come from the metrics store (every
node's counts, merged); queues, admission, wheel and partitions are this node's view.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Awaitable, Callable
from typing import Any

from fastapi import APIRouter, Request, Response
from prometheus_client import CONTENT_TYPE_LATEST, generate_latest
from pydantic import BaseModel, Field

from tickwheel.api import views
from tickwheel.api.auth import Scope, needs
from tickwheel.api.routes import node_of
from tickwheel.api.schemas.tasks import AdmissionOut
from tickwheel.metrics.recorder import Event, Lateness
from tickwheel.metrics.window import Percentiles, lateness, series
from tickwheel.models import Status

router = APIRouter()
COUNTS_CACHE_SECONDS = 2.0


class LatenessOut(BaseModel):
    p50: float | None
    p99: float | None
    samples: int


class LatenessesOut(BaseModel):
    trigger: LatenessOut  # release stamp minus due time, ms, over the last 60 s
    start: LatenessOut  # claim time minus due time


class SeriesOut(BaseModel):
    start_ms: int
    step_seconds: int = 1
    triggered: list[int]
    started: list[int]
    succeeded: list[int]
    failed: list[int]
    retried: list[int]


class StatsOut(BaseModel):
    now_ms: int
    counts: dict[str, int]
    series: SeriesOut
    lateness_ms: LatenessesOut
    queues: dict[str, int]
    admission: AdmissionOut
    wheel_size: int
    partitions_owned: int
    outages: list[str] = Field(
        description="Dependencies (store, ready_queue) this node found failing a moment ago."
    )


class StatusCounts:
    """Tasks per status, read from the store at most once per `COUNTS_CACHE_SECONDS`;
    viewers arriving during a read wait for it instead of starting their own."""

    def __init__(self, read: Callable[[], Awaitable[dict[Status, int]]]) -> None:
        self._read = read
        self._counts: dict[Status, int] = {}
        self._read_at = float("-inf")
        self._lock = asyncio.Lock()

    async def get(self) -> dict[Status, int]:
        async with self._lock:
            if time.monotonic() - self._read_at >= COUNTS_CACHE_SECONDS:
                self._counts = await self._read()
                self._read_at = time.monotonic()
        return self._counts


@router.get("/api/stats", response_model=StatsOut, dependencies=needs(Scope.READ))
async def stats(request: Request) -> StatsOut:
    """The live dashboard's data: counts per status, 15 minutes of per-second events,
    lateness percentiles of the last minute, queues and admission."""
    node = node_of(request)
    counts: StatusCounts = request.app.state.status_counts
    by_status = await counts.get()
    now_ms = node.clock.now_ms()
    seconds = await node.metrics_store.seconds(now_ms)
    events = series(seconds, now_ms)
    queues = views.queues_out(node)
    return StatsOut(
        now_ms=now_ms,
        counts={status.value: by_status.get(status, 0) for status in Status},
        series=SeriesOut(start_ms=events.start_ms, **{e.value: events.counts[e] for e in Event}),
        lateness_ms=LatenessesOut(
            trigger=_lateness_out(lateness(seconds, now_ms, Lateness.TRIGGER)),
            start=_lateness_out(lateness(seconds, now_ms, Lateness.START)),
        ),
        queues=queues.depth,
        admission=AdmissionOut.model_validate(queues.model_dump(exclude={"depth"})),
        wheel_size=node.trigger.size(),
        partitions_owned=len(node.leases.held),
        outages=node.outages(),
    )


@router.get(
    "/metrics",
    dependencies=needs(Scope.READ),
    response_class=Response,
    responses={200: {"content": {"text/plain": {}}, "description": "Prometheus text"}},
)
async def metrics(request: Request) -> Response:
    """This process's metrics in the Prometheus text format."""
    text = generate_latest(node_of(request).prometheus)
    return Response(text, media_type=CONTENT_TYPE_LATEST)


def _lateness_out(p: Percentiles) -> LatenessOut:
    return LatenessOut(p50=p.p50, p99=p.p99, samples=p.samples)


async def stats_payload(request: Request) -> dict[str, Any]:
    """The body of `/api/stats` as JSON-ready data, for the dashboard's event stream."""
    return (await stats(request)).model_dump(mode="json")
