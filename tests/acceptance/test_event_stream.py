"""The dashboard's event stream, `/api/stream`, on a real `tickwheel up`."""

from __future__ import annotations

import json
import signal
import time
from typing import Any

import httpx
from harness import Tickwheel


def first_event(tw: Tickwheel, **headers: str) -> tuple[str, dict[str, Any]]:
    """The first named event of a new stream."""
    with httpx.stream("GET", f"{tw.url}/api/stream", headers=headers, timeout=10) as answer:
        assert answer.status_code == 200
        assert answer.headers["content-type"].startswith("text/event-stream")
        name = None
        for line in answer.iter_lines():
            if line.startswith("event:"):
                name = line.removeprefix("event:").strip()
            elif line.startswith("data:") and name:
                return name, json.loads(line.removeprefix("data:"))
    raise AssertionError("the stream ended without an event")


def test_the_stream_sends_the_stats_every_second(tickwheel_factory: type) -> None:
    tw = tickwheel_factory.start()
    name, stats = first_event(tw)
    assert name == "stats"
    assert set(stats["counts"]) >= {"pending", "running", "succeeded", "failed"}
    assert len(stats["series"]["succeeded"]) == 900


def test_streams_are_bounded(tickwheel_factory: type) -> None:
    tw = tickwheel_factory.start(extra_env={"TICKWHEEL_MAX_STREAMS": "2"})
    with httpx.Client(base_url=tw.url, timeout=10) as client:
        with client.stream("GET", "/api/stream"), client.stream("GET", "/api/stream"):
            refused = client.get("/api/stream")
            assert refused.status_code == 429
            assert refused.json()["error"] == "overloaded"
        deadline = time.monotonic() + 10
        while time.monotonic() < deadline:  # closed streams give their places back
            with client.stream("GET", "/api/stream") as again:
                if again.status_code == 200:
                    return
            time.sleep(0.2)
        raise AssertionError("a closed stream never gave its place back")


def test_an_open_stream_does_not_hold_up_a_shutdown(tickwheel_factory: type) -> None:
    tw = tickwheel_factory.start()
    with httpx.stream("GET", f"{tw.url}/api/stream", timeout=10) as answer:
        assert answer.status_code == 200
        assert tw.process is not None
        started = time.monotonic()
        tw.process.send_signal(signal.SIGTERM)
        assert tw.process.wait(20) in (0, -signal.SIGTERM)
    # The grace for running requests is 30 s; a stream ends as soon as exiting begins.
    assert time.monotonic() - started < 10
