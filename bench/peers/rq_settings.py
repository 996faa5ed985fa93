"""The settings module `rq worker -c bench.peers.rq_settings` reads (RQ's
documented config file): the sink's Redis URL, which the harness puts in the worker's
environment, and the queue. Importing it also imports the `tickwheel` package, the jobs'
module, into the worker before it forks, as RQ's performance notes recommend."""

from __future__ import annotations

from bench.peers.rq_peer import QUEUE
from bench.peers.sink import sink_url

REDIS_URL = sink_url()
QUEUES = [QUEUE]
