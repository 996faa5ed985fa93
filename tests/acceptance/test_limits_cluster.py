"""Rate and concurrency limits across a real cluster: three worker processes share one
limit of 50 starts a second on a key and one of 20 running at once on another, measured
from the handlers' own records, while tasks of another type run beside them unlimited;
and a worker killed while it holds slots gives them back only after its leases."""

from __future__ import annotations

import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
from cluster import Cluster, cluster_in
from harness import Tickwheel, wait_for

# The handlers append one line per start to a file of their process: "kind start end
# attempt" (end 0 until it ends; a killed handler never writes its end).
HANDLERS = """
import asyncio, os, time
from tickwheel import App

app = App()
FOLDER = os.environ["LIMITS_RECORDS"]


def record(kind, start, end, attempt):
    with open(os.path.join(FOLDER, f"{os.getpid()}.log"), "a") as out:
        out.write(f"{kind} {start!r} {end!r} {attempt}\\n")


@app.task("rated")
async def rated(ctx, payload):
    record("rated", time.time(), 0, ctx.attempt)


@app.task("slotted")
async def slotted(ctx, payload):
    start = time.time()
    seconds = payload["seconds"] if ctx.attempt == 1 else payload.get("retry_seconds", 0.05)
    record("slotted-start", start, 0, ctx.attempt)
    await asyncio.sleep(seconds)
    record("slotted", start, time.time(), ctx.attempt)


@app.task("free")
async def free(ctx, payload):
    record("free", time.time(), 0, ctx.attempt)
"""
SETTINGS = {
    "TICKWHEEL_PARTITIONS": "16",
    "TICKWHEEL_PARTITION_LEASE_SECONDS": "3",
    "TICKWHEEL_LEASE_SECONDS": "2",
}


class Records:
    def __init__(self, folder: Path) -> None:
        self.folder = folder
        folder.mkdir()

    def lines(self) -> list[tuple[str, float, float, int]]:
        found = []
        for path in self.folder.glob("*.log"):
            for line in path.read_text().splitlines():
                kind, start, end, attempt = line.split()
                found.append((kind, float(start), float(end), int(attempt)))
        return found

    def starts(self, kind: str) -> list[float]:
        return sorted(start for k, start, _, _ in self.lines() if k == kind)


@pytest.fixture
def records(tmp_path: Path) -> Records:
    (tmp_path / "limited.py").write_text(HANDLERS)
    return Records(tmp_path / "records")


def env_of(tmp_path: Path, records: Records) -> dict[str, str]:
    return {"PYTHONPATH": str(tmp_path), "LIMITS_RECORDS": str(records.folder)}


def most_in_a_second(starts: list[float]) -> int:
    """The most starts within any one second, from any start."""
    most, first = 0, 0
    for last, at in enumerate(starts):
        while at - starts[first] >= 1.0:
            first += 1
        most = max(most, last - first + 1)
    return most


def most_at_once(intervals: list[tuple[float, float]]) -> int:
    events = sorted([(s, 1) for s, _ in intervals] + [(e, -1) for _, e in intervals])
    most = running = 0
    for _, change in events:
        running += change
        most = max(most, running)
    return most


def put_limit(http: httpx.Client, scope: str, name: str, **rule: Any) -> None:
    answer = http.put(f"/api/limits/{scope}/{name}", json=rule)
    assert answer.status_code == 200, answer.text


def submit(http: httpx.Client, task_type: str, count: int, **body: Any) -> list[str]:
    ids = []
    for first in range(0, count, 1000):
        tasks = [{"task_type": task_type, **body} for _ in range(min(1000, count - first))]
        answer = http.post("/api/tasks/batch", json={"tasks": tasks})
        assert answer.status_code == 201, answer.text
        ids += [t["task_id"] for t in answer.json()["tasks"]]
    return ids


@pytest.fixture
def cluster(tmp_path: Path, records: Records) -> Iterator[Cluster]:
    with cluster_in(tmp_path, **SETTINGS, **env_of(tmp_path, records)) as made:
        made.start_api()
        made.start("scheduler", "scheduler-1")
        yield made


def test_three_workers_hold_a_rate_and_a_concurrency_limit_for_30_seconds(
    cluster: Cluster, records: Records
) -> None:
    with cluster.client() as http:
        _hold_both_limits(cluster, http, records)


def _hold_both_limits(cluster: Cluster, http: httpx.Client, records: Records) -> None:
    put_limit(http, "key", "partner-api", rate="50/s")
    put_limit(http, "key", "tenant-7", concurrency=20)
    for n in range(3):
        cluster.start("worker", f"worker-{n}", "--app", "limited:app")
    time.sleep(1.5)  # every claimer reads the limits within a second
    began = time.time()
    submit(http, "rated", 1600, limit_key="partner-api")  # more than 30 s of starts
    submit(http, "slotted", 3200, limit_key="tenant-7", payload={"seconds": 0.2})
    free = submit(http, "free", 5000)
    assert wait_for(lambda: len(records.starts("free")) >= len(free), timeout=60), cluster.logs()
    free_seconds = max(records.starts("free")) - began
    time.sleep(max(0.0, began + 30 - time.time()))

    rated = [s for s in records.starts("rated") if s <= began + 30]
    slotted = [(s, e) for k, s, e, _ in records.lines() if k == "slotted" and s <= began + 30]
    print(
        f"30 s: {len(rated)} rated starts (most in a second {most_in_a_second(rated)}), "
        f"{len(slotted)} slotted runs (most at once {most_at_once(slotted)}); "
        f"{len(free):,} free tasks started within {free_seconds:.1f} s"
    )
    assert most_in_a_second(rated) <= 50
    assert len(rated) >= 30 * 35  # the limit binds, and is used (at best 50/1.05 a second)
    assert most_at_once(slotted) <= 20
    assert len(slotted) >= 30 * 50  # 20 slots of 0.2 s: at best 100 a second
    # Unlimited work is not held behind the limits: it drains while they bind.
    assert free_seconds < 30


@pytest.mark.parametrize("embedded", [False, True], ids=["distributed", "embedded"])
def test_a_killed_workers_slots_come_back_after_its_leases_not_before(
    tmp_path: Path, records: Records, embedded: bool
) -> None:
    if embedded:
        env = {**env_of(tmp_path, records), "TICKWHEEL_LEASE_SECONDS": "2"}
        server = Tickwheel(tmp_path / "t.db", app="limited:app", extra_env=env).start()
        try:
            with httpx.Client(base_url=server.url, timeout=30) as http:
                _kill_while_holding(http, records, kill=server.kill, again=server.start)
        finally:
            server.stop()
        return
    with cluster_in(tmp_path, **SETTINGS, **env_of(tmp_path, records)) as cluster:
        cluster.start_api()
        cluster.start("scheduler", "scheduler-1")
        doomed = cluster.start("worker", "worker-doomed", "--app", "limited:app")

        def replace_worker() -> None:
            cluster.start("worker", "worker-after", "--app", "limited:app")

        with cluster.client() as http:
            _kill_while_holding(http, records, kill=doomed.kill, again=replace_worker)


def _kill_while_holding(http: httpx.Client, records: Records, *, kill: Any, again: Any) -> None:
    """Three slots taken by long tasks, three more tasks held; kill -9 the worker; the
    held and the killed tasks start only once the killed attempts' leases have ended,
    never more than three at once, and every one succeeds."""
    put_limit(http, "key", "tenant-9", concurrency=3)
    time.sleep(1.5)
    ids = submit(http, "slotted", 3, limit_key="tenant-9", payload={"seconds": 60})
    assert wait_for(lambda: len(records.starts("slotted-start")) == 3, timeout=20)
    ids += submit(http, "slotted", 3, limit_key="tenant-9", payload={"seconds": 0.1})
    time.sleep(1)
    assert len(records.starts("slotted-start")) == 3  # the other three are held
    kill()
    killed_at = time.time()
    again()
    done = lambda: all(  # noqa: E731
        http.get(f"/api/tasks/{i}").json()["status"] == "succeeded" for i in ids
    )
    assert wait_for(done, timeout=60)
    later = [s for s in records.starts("slotted-start") if s > killed_at]
    # A lease of 2 s, renewed every 2/3 s until the kill: it ends at least 1.3 s after.
    assert min(later) >= killed_at + 1.3, (killed_at, later)
    ended = {start for k, start, _, _ in records.lines() if k == "slotted"}
    runs = [(s, e) for k, s, e, _ in records.lines() if k == "slotted"]
    runs += [(s, killed_at) for s in records.starts("slotted-start") if s not in ended]
    assert most_at_once(runs) <= 3
    assert len(records.starts("slotted-start")) == 9  # 3 killed, their 3 retries, 3 held
