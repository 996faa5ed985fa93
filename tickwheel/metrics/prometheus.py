"""Prometheus exposition of one node: a registry of its own, read at scrape time.

Nothing is observed through prometheus-client on the hot path: one collector turns
the recorder's lifetime totals and the node's live state into metric families when
scraped, so a release of 5,000 tasks costs 5,000 bucket increments, not 5,000
`observe` calls. A registry per node (not the global one) lets several nodes share a
test process.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass

from prometheus_client import CollectorRegistry
from prometheus_client.core import (
    CounterMetricFamily,
    GaugeMetricFamily,
    HistogramMetricFamily,
    Metric,
)
from prometheus_client.registry import Collector

from tickwheel.metrics.buckets import STEPS_PER_OCTAVE
from tickwheel.metrics.recorder import Lateness, Lifetime

# Histogram bounds, one per octave up to about 70 minutes. Values are whole ms, so
# bucket b's "below 2**e ms" is exactly "at most 2**e - 1 ms".
OCTAVES = 23


@dataclass(frozen=True, slots=True)
class LiveState:
    """What a scrape reads from the node as it is now."""

    depth: Callable[[], dict[str, int]]
    wheel_size: Callable[[], int]
    partitions_owned: Callable[[], int]


class NodeCollector(Collector):
    def __init__(self, lifetime: Lifetime, live: LiveState) -> None:
        self._lifetime = lifetime
        self._live = live

    def collect(self) -> Iterator[Metric]:
        life = self._lifetime
        events = CounterMetricFamily(
            "tickwheel_task_events", "Task events on this node, by kind", labels=["event"]
        )
        for event, n in sorted(life.events.items()):
            events.add_metric([event.value], n)
        yield events
        for kind in Lateness:
            yield _histogram(
                f"tickwheel_{kind}_lateness_seconds",
                f"{kind.capitalize()} time minus due time",
                life.lateness[kind],
                life.lateness_sum_ms[kind],
            )
        yield _histogram(
            "tickwheel_run_seconds",
            "Attempt end minus attempt start",
            life.run_time,
            life.run_time_sum_ms,
        )
        yield from self._live_gauges()
        yield CounterMetricFamily(
            "tickwheel_partition_lease_gains", "Partition leases gained", value=life.leases_gained
        )
        yield CounterMetricFamily(
            "tickwheel_partition_lease_losses", "Partition leases lost", value=life.leases_lost
        )

    def _live_gauges(self) -> Iterator[Metric]:
        depth = GaugeMetricFamily(
            "tickwheel_ready_depth", "Tasks waiting in the ready queue", labels=["queue"]
        )
        for queue, n in sorted(self._live.depth().items()):
            depth.add_metric([queue], n)
        yield depth
        yield GaugeMetricFamily(
            "tickwheel_wheel_size", "Tasks on this node's timing wheels", self._live.wheel_size()
        )
        yield GaugeMetricFamily(
            "tickwheel_partitions_owned",
            "Partitions this node triggers",
            self._live.partitions_owned(),
        )


def _histogram(name: str, doc: str, counts: Sequence[int], sum_ms: int) -> Metric:
    cumulative, buckets = 0, []
    for octave in range(OCTAVES):
        # Buckets up to 4 * octave hold the values below 2**octave ms.
        first = 0 if octave == 0 else STEPS_PER_OCTAVE * (octave - 1) + 1
        cumulative += sum(counts[first : STEPS_PER_OCTAVE * octave + 1])
        buckets.append((repr((2**octave - 1) / 1000), cumulative))
    buckets.append(("+Inf", sum(counts)))
    return HistogramMetricFamily(name, doc, buckets=buckets, sum_value=sum_ms / 1000)


def registry(lifetime: Lifetime, live: LiveState) -> CollectorRegistry:
    """A registry of this node alone."""
    reg = CollectorRegistry(auto_describe=False)
    reg.register(NodeCollector(lifetime, live))
    return reg
