"""The app `celery -A bench.peers.celery_tasks worker` loads: on the sink's
Redis URL, which the harness puts in the worker's environment. Only the worker imports
this module; the harness builds its own app with `celery_peer.make_app`."""

from __future__ import annotations

from bench.peers.celery_peer import make_app
from bench.peers.sink import sink_url

app = make_app(sink_url())
