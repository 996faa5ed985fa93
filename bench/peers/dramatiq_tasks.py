"""The task Dramatiq's workers run: `dramatiq bench.peers.dramatiq_tasks`.

Set up as Dramatiq's documentation shows: a Redis broker made the global broker before
the actor is declared, since Dramatiq binds an actor to its broker when it is declared.
The broker is at the sink's URL (read once, at import); nothing connects until a message
is sent or consumed.
"""

from __future__ import annotations

import logging

import dramatiq
from dramatiq.brokers.redis import RedisBroker

from bench.peers import recorder, sink

broker = RedisBroker(url=sink.sink_url())  # type: ignore[no-untyped-call]  # unannotated in Dramatiq
dramatiq.set_broker(broker)

# Dramatiq's CLI configures logging at INFO and has no flag to raise it.
logging.getLogger("dramatiq").setLevel(logging.WARNING)


@dramatiq.actor
def record(run: str, index: int) -> None:
    recorder.record(run, index)
