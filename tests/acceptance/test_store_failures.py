"""Store failures seen from outside: a terminate storm of the API's own PostgreSQL
backends, SIGTERM with a batch in flight, and a full disk under the embedded store.
Every answer is a 201 or a 503 with Retry-After naming the cause, never a 500, and
nothing acknowledged is lost. Nothing here touches the machine's services beyond the
backends this test's own API opened (found by their application_name)."""

from __future__ import annotations

import asyncio
import signal
import threading
import time
import uuid
from collections import Counter
from collections.abc import Iterator
from dataclasses import replace
from pathlib import Path

import asyncpg
import httpx
import pytest
from cluster import Cluster, cluster_in
from harness import Tickwheel
from servers import fill

from tickwheel import Client
from tickwheel.client.retries import DEFAULT_POLICY, Retries

PATIENT = Retries(replace(DEFAULT_POLICY, max_retries=20))


@pytest.fixture
def cluster(tmp_path: Path) -> Iterator[Cluster]:
    with cluster_in(tmp_path, TICKWHEEL_SHUTDOWN_GRACE_SECONDS="4") as made:
        yield made


class Storm:
    """Terminates the backends of one application_name every `every` seconds."""

    def __init__(self, database_url: str, application_name: str, every: float = 0.05) -> None:
        self.url, self.name, self.every = database_url, application_name, every
        self.terminated = 0
        self._stop = threading.Event()
        self._thread = threading.Thread(target=lambda: asyncio.run(self._run()))

    async def _run(self) -> None:
        db = await asyncpg.connect(self.url)
        try:
            while not self._stop.is_set():
                rows = await db.fetch(
                    "SELECT pg_terminate_backend(pid) FROM pg_stat_activity"
                    " WHERE application_name = $1",
                    self.name,
                )
                self.terminated += len(rows)
                await asyncio.sleep(self.every)
        finally:
            await db.close()

    def __enter__(self) -> Storm:
        self._thread.start()
        return self

    def __exit__(self, *_: object) -> None:
        self._stop.set()
        self._thread.join(10)


def _bodies(count: int, tag: str) -> list[dict[str, object]]:
    return [
        {
            "task_type": "noop",
            "task_id": str(uuid.uuid4()),
            "payload": {"tag": tag, "i": i},
            "schedule": {"type": "delayed", "delay_seconds": 3600},
        }
        for i in range(count)
    ]


def _only_201_or_503(answer: httpx.Response, answers: Counter[str]) -> None:
    answers[str(answer.status_code)] += 1
    assert answer.status_code in (201, 503), answer.text
    if answer.status_code == 503:
        assert answer.headers.get("retry-after"), answer.headers
        assert answer.json()["error"] in ("store_unavailable", "outcome_unknown"), answer.text
        assert answer.headers.get("connection") != "close"


def test_a_terminate_storm_answers_201_or_503_and_the_client_stores_each_task_once(
    cluster: Cluster,
) -> None:
    node_id = f"api-{uuid.uuid4().hex[:8]}"
    cluster.start_api(node_id)
    stored_ids: list[str] = []
    answers: Counter[str] = Counter()
    deadline = time.monotonic() + 6
    with Storm(cluster.database_url, f"tickwheel-{node_id}") as storm:
        with httpx.Client(base_url=cluster.api_url, timeout=30) as http:
            while time.monotonic() < deadline:
                batch = _bodies(50, "batch")
                answer = http.post("/api/tasks/batch", json={"tasks": batch})
                _only_201_or_503(answer, answers)
                if answer.status_code == 201:
                    stored_ids += [str(b["task_id"]) for b in batch]
                (single,) = _bodies(1, "single")
                answer = http.post("/api/tasks", json=single)
                _only_201_or_503(answer, answers)
        # The storm goes on through these calls, a backend killed every 50 ms: the
        # default client gives up after 4 retries, which a run of bad luck can use up.
        # What is asserted is that a call retried until it is answered stores its task
        # exactly once, so this client retries longer. Each 503 met waits its Retry-After,
        # so the calls are few enough to end within the test's time on a loaded machine.
        with Client(cluster.api_url, retries=PATIENT) as client:
            submitted = [
                client.submit("noop", {"tag": "client"}, delay_seconds=3600).task_id
                for _ in range(50)
            ]
    assert storm.terminated > 20, storm.terminated
    assert answers["503"] > 0, answers  # the storm was felt
    rows = cluster.query("SELECT task_id FROM tasks WHERE payload::text LIKE '%client%'")
    counts = Counter(str(r[0]) for r in rows)
    assert set(counts) == set(submitted) and set(counts.values()) == {1}
    found = {str(r[0]) for r in cluster.query("SELECT task_id FROM tasks")}
    assert set(stored_ids) <= found  # every acknowledged batch is stored


@pytest.mark.parametrize("hold_seconds", [1.5, 12.0], ids=["commits-in-time", "past-grace"])
def test_sigterm_with_a_keyed_batch_in_flight_answers_what_happened(
    cluster: Cluster, hold_seconds: float
) -> None:
    """The batch waits on a row lock held by the test; SIGTERM comes meanwhile. Released
    within the grace (4 s), the batch commits and is answered 201; held past it, the
    answer is a 503 and nothing is stored. Either way the process exits within the grace."""
    api = cluster.start_api()
    tasks = [
        {
            "task_type": "noop",
            "payload": i,
            "idempotency_key": f"k-{i}",
            "ordering_key": f"o{i % 10}",
        }
        for i in range(300)
    ]
    locked, release = threading.Event(), threading.Event()

    async def hold() -> None:
        db = await asyncpg.connect(
            cluster.database_url, server_settings={"search_path": cluster.schema}
        )
        async with db.transaction():
            await db.execute("SELECT value FROM cluster WHERE key = 'mark' FOR UPDATE")
            locked.set()
            await asyncio.get_running_loop().run_in_executor(None, release.wait, 30)
        await db.close()

    holder = threading.Thread(target=lambda: asyncio.run(hold()))
    holder.start()
    assert locked.wait(10)
    answers: list[httpx.Response] = []
    sender = threading.Thread(
        target=lambda: answers.append(
            httpx.post(f"{cluster.api_url}/api/tasks/batch", json={"tasks": tasks}, timeout=60)
        )
    )
    sender.start()
    time.sleep(1.0)  # the batch waits on the lock
    stopped_at = time.monotonic()
    api.signal(signal.SIGTERM)
    threading.Timer(hold_seconds, release.set).start()
    api.popen.wait(30)
    exited_after = time.monotonic() - stopped_at
    sender.join(30)
    release.set()
    holder.join(30)
    (answer,) = answers
    stored = cluster.query("SELECT count(*) FROM tasks")[0][0]
    assert exited_after < 4 + 1.0, exited_after
    if hold_seconds < 4:
        assert answer.status_code == 201, answer.text
        assert stored == 300
    else:
        assert answer.status_code == 503, answer.text
        assert answer.headers["retry-after"]
        assert answer.json()["error"] == "store_unavailable"
        assert stored == 0


def test_a_full_disk_answers_storage_full_on_an_open_connection_and_recovers(
    small_disk: Path, tmp_path: Path
) -> None:
    tw = Tickwheel(small_disk / "tickwheel.db")
    tw.log = tmp_path / "tickwheel.log"  # not on the disk that fills
    tw.start()
    acknowledged: list[str] = []
    answers: Counter[str] = Counter()
    try:
        with httpx.Client(base_url=tw.url, timeout=30) as http:

            def submit() -> httpx.Response:
                batch = _bodies(200, "disk")
                answer = http.post("/api/tasks/batch", json={"tasks": batch})
                answers[f"{answer.status_code} {answer.json().get('error', '')}"] += 1
                assert answer.status_code in (201, 503), answer.text
                assert answer.headers.get("connection") != "close"  # kept alive
                if answer.status_code == 201:
                    acknowledged.extend(str(b["task_id"]) for b in batch)
                return answer

            assert submit().status_code == 201
            filler = fill(small_disk)
            full = None
            for _ in range(200):
                answer = submit()
                if answer.status_code == 503:
                    full = answer
                    break
            assert full is not None, answers
            assert full.json()["error"] == "storage_full", full.text
            assert full.headers["retry-after"]
            for _ in range(20):  # refused again and again, never blaming the workers
                assert submit().status_code == 503
            filler.unlink()
            assert wait_until_201(submit), answers
            missing = [
                task_id
                for task_id in acknowledged
                if http.get(f"/api/tasks/{task_id}").status_code != 200
            ]
            assert not missing, f"{len(missing)} acknowledged tasks lost"
    finally:
        tw.stop()
    log = tw.log.read_text()
    assert "Traceback" not in log, log[-3000:]
    assert log.count("storage_full") <= 3, log[-3000:]  # tallied, not a line per request


def wait_until_201(submit: object, seconds: float = 10.0) -> bool:
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        if submit().status_code == 201:  # type: ignore[operator]
            return True
        time.sleep(0.2)
    return False
