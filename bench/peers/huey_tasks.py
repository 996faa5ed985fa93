"""The Huey `huey_consumer bench.peers.huey_tasks.huey` loads, with its task:
on the sink's Redis URL, which the harness puts in the consumer's environment. Only the
consumer imports this module; the harness builds its own with `huey_peer.make_huey`."""

from __future__ import annotations

from bench.peers.huey_peer import make_huey
from bench.peers.sink import sink_url

huey, record = make_huey(sink_url())
