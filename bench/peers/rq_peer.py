"""RQ, as its documentation sets it up for production on one machine, over Redis.

Workers: `rq worker -c bench.peers.rq_settings --with-scheduler --quiet`, one
process per core. RQ's docs: "Each worker will process a single job at a time ... If
you want to perform jobs concurrently, simply start more workers", under a process
manager; so N workers as a supervisor would start them (`rq worker-pool` exists, but the
docs present it as a convenience, not as the production recommendation). The default
worker class, which forks a work horse per job (the docs' "fetch-fork-execute loop":
"clean ... but also slow"); `--with-scheduler` on each, as the docs ask for `enqueue_at`
(one scheduler is active at a time; once a second it moves up to 1,000 due jobs to the
queue). Default result TTL and timeouts; `--quiet` logs at WARNING, not lines per job.

The settings module (`-c`, RQ's documented config file) gives the Redis URL and the
queue, and by being imported loads the jobs' module before the fork, which the docs'
performance notes recommend. Without it every work horse would import the `tickwheel`
package on its own (about 2 s here, so 1 job/s): a cost of where our task lives, not of
RQ; the fork per job is RQ's and stays.

Submission: jobs due now through the documented bulk API, `enqueue_many` with
`Queue.prepare_data` (one Redis pipeline per chunk); jobs with an ETA through
`enqueue_at`, which has no bulk twin but takes the same `pipeline` argument, so a chunk
is still one pipeline. The job's function is the shared body by reference, in the form
that ships its record before returning (`record_and_ship`): RQ's work horse runs one job
and ends with `os._exit`, so no batch could form in it, and no exit function runs.
"""

from __future__ import annotations

from datetime import datetime

import redis
from rq import Queue

from bench.peers.recorder import record_and_ship
from bench.peers.redis_brokered import CORES, RedisBrokered, script
from bench.peers.sink import sink_url

QUEUE = "tickwheel-bench"
SETTINGS = "bench.peers.rq_settings"


class RQPeer(RedisBrokered):
    name = "RQ"
    distribution = "rq"
    broker_keys = ("rq:*",)

    def __init__(self) -> None:
        self.redis = redis.Redis.from_url(sink_url())
        self.queue = Queue(QUEUE, connection=self.redis)

    def worker_commands(self) -> list[list[str]]:
        command = [script("rq"), "worker", "-c", SETTINGS, "--with-scheduler", "--quiet"]
        return [command for _ in range(CORES)]

    def enqueue(self, run: str, indexes: range, eta: datetime | None) -> None:
        if eta is None:
            jobs = [Queue.prepare_data(record_and_ship, (run, i)) for i in indexes]
            self.queue.enqueue_many(jobs)
            return
        with self.redis.pipeline() as pipe:
            for index in indexes:
                self.queue.enqueue_at(eta, record_and_ship, args=(run, index), pipeline=pipe)
            pipe.execute()

    def release(self) -> None:
        self.redis.close()


def peer() -> RQPeer:
    return RQPeer()
