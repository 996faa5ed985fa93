"""The task body every system runs: records batched per process, none lost across a fork
or at exit, none shipped twice. Each test records under a run of its own and deletes it."""

from __future__ import annotations

import os
import subprocess
import sys
import time
import uuid
from collections.abc import Iterator

import pytest
import redis

from bench import pythonpath
from bench.peers.recorder import Recorder
from bench.peers.sink import key, sink_url

FORKS = """
import multiprocessing, os, sys
from bench.peers import recorder

recorder.INTERVAL_SECONDS = 3600  # so that nothing ships but at exit
run = sys.argv[1]

def records(start):
    for i in range(start, start + 100):
        recorder.record(run, i)

records(0)  # still buffered in the parent at each fork below
if (pid := os.fork()) == 0:
    records(100)
    sys.exit(0)  # a forked child that ends normally: atexit
os.waitpid(pid, 0)
child = multiprocessing.get_context("fork").Process(target=records, args=(200,))
child.start()  # a pool's child: its exit functions, then os._exit
child.join()
if (pid := os.fork()) == 0:
    recorder.record_and_ship(run, 300)
    os._exit(0)  # RQ's work horse: no exit function at all
os.waitpid(pid, 0)
records(400)
"""


@pytest.fixture
def run() -> Iterator[str]:
    name = f"test-recorder-{uuid.uuid4().hex[:8]}"
    yield name
    with redis.Redis.from_url(sink_url()) as client:
        client.delete(key(name))


def recorded(run: str) -> list[int]:
    with redis.Redis.from_url(sink_url()) as client:
        entries = client.lrange(key(run), 0, -1)
    return sorted(int(entry.split()[0]) for entry in entries)


def test_ships_in_batches_and_the_rest_on_close(run: str) -> None:
    recorder = Recorder(sink_url(), interval_seconds=0.02)
    for index in range(2_000):
        recorder.record(run, index)
        if index % 200 == 0:
            time.sleep(0.03)  # past an interval: the thread ships what came before
    recorder.close()
    assert recorded(run) == list(range(2_000))
    assert 2 <= recorder.shipments <= 20  # one RPUSH a batch, not one a record


def test_a_batch_holds_each_run_apart(run: str) -> None:
    other = f"{run}-other"
    recorder = Recorder(sink_url(), interval_seconds=3600)
    try:
        for index in range(10):
            recorder.record(run if index % 2 else other, index)
        recorder.close()
        assert recorder.shipments == 1
        assert (recorded(run), recorded(other)) == ([1, 3, 5, 7, 9], [0, 2, 4, 6, 8])
    finally:
        with redis.Redis.from_url(sink_url()) as client:
            client.delete(key(other))


def test_nothing_is_lost_or_doubled_across_forks_and_at_exit(run: str) -> None:
    done = subprocess.run(
        [sys.executable, "-c", FORKS, run],
        env={**os.environ, "PYTHONPATH": pythonpath()},
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    expected = [*range(0, 100), *range(100, 200), *range(200, 300), 300, *range(400, 500)]
    assert recorded(run) == expected
