"""Many clients send the same idempotent submission at once to a live server."""

from __future__ import annotations

import threading

import httpx
from harness import Tickwheel


def test_the_same_submission_from_many_clients_makes_exactly_one_task(
    tickwheel_factory: type,
) -> None:
    tw: Tickwheel = tickwheel_factory.start()
    body = {
        "task_type": "noop",
        "payload": {"invoice": 7},
        "schedule": {"type": "delayed", "delay_seconds": 3600},
        "idempotency_key": "invoice-7",
    }
    start = threading.Barrier(40)
    answers: list[httpx.Response] = []
    lock = threading.Lock()

    def client() -> None:
        with httpx.Client(base_url=tw.url, timeout=30) as http:
            start.wait()
            response = http.post("/api/tasks", json=body)
        with lock:
            answers.append(response)

    threads = [threading.Thread(target=client) for _ in range(40)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(60)
    assert sorted(a.status_code for a in answers) == [200] * 39 + [201]
    assert len({a.json()["task_id"] for a in answers}) == 1
    with tw.client() as http:
        assert len(http.get("/api/tasks", params={"limit": 500}).json()["tasks"]) == 1
