"""What admission control is fed: the cluster's drain, measured twice a second."""

from __future__ import annotations

import logging

from tickwheel.clock import Clock
from tickwheel.engine.admission import SAMPLE_SECONDS, Admission
from tickwheel.metrics.base import MetricsStore
from tickwheel.metrics.window import EndedTally
from tickwheel.periodic import Periodic
from tickwheel.queue.base import ReadyQueue

log = logging.getLogger(__name__)


def drain_loop(
    admission: Admission,
    *,
    queue: ReadyQueue,
    metrics: MetricsStore,
    clock: Clock,
    shares_workers: bool,
) -> Periodic:
    """Admission control judges the whole cluster: twice a second this node reads the
    ready queue's depth (a shared queue changes under other nodes' hands) and the
    attempts every worker ended, from the metrics all nodes flush. Where the workers
    share this process (`shares_workers`), a spell in which the API admitted work is
    told apart: the submissions took the workers' turn on the event loop."""
    ended = EndedTally()
    admitted = admission.admitted

    async def measure() -> None:
        nonlocal admitted
        depth = await queue.fresh_depth()
        now_ms = clock.now_ms()
        seconds = await metrics.seconds(now_ms)
        contended = shares_workers and admission.admitted != admitted
        admitted = admission.admitted
        admission.observe(ended.update(seconds, now_ms), depth, contended=contended)

    return Periodic(
        "measuring the drain rate", measure, clock=clock, every_seconds=SAMPLE_SECONDS, log=log
    )
