"""Runs the real `tickwheel up` in a subprocess, and a target HTTP server that records calls."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import httpx
import pytest

from bench.targets import free_port

TICKWHEEL = str(Path(sys.executable).with_name("tickwheel"))


class Tickwheel:
    """One `tickwheel up` process on a database file."""

    def __init__(
        self,
        db: Path,
        *,
        extra_env: dict[str, str] | None = None,
        app: str | None = None,
        cwd: Path | None = None,
        command: str = TICKWHEEL,
    ) -> None:
        self.db = db
        self.command = command  # the `tickwheel` of another environment, if given
        self.port = free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        self.env = {
            **os.environ,
            "TICKWHEEL_PORT": str(self.port),
            "TICKWHEEL_DATABASE_URL": f"sqlite:///{db}",
            "TICKWHEEL_LOG_LEVEL": "warning",
            **(extra_env or {}),
        }
        if app:
            self.env["TICKWHEEL_APP"] = app
        self.cwd = cwd or db.parent
        self.process: subprocess.Popen[bytes] | None = None
        self.log = db.parent / f"tickwheel-{self.port}.log"

    def start(self, timeout: float = 20.0) -> Tickwheel:
        with self.log.open("ab") as out:
            self.process = subprocess.Popen(
                [self.command, "up"],
                env=self.env,
                cwd=self.cwd,
                stdout=out,
                stderr=subprocess.STDOUT,
            )
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self.process.poll() is not None:
                raise RuntimeError(f"tickwheel up exited: {self.log.read_text()[-3000:]}")
            try:
                if httpx.get(f"{self.url}/healthz", timeout=1).status_code == 200:
                    return self
            except httpx.HTTPError:
                pass
            time.sleep(0.05)
        raise RuntimeError(f"tickwheel up did not start: {self.log.read_text()[-3000:]}")

    def kill(self) -> None:
        """kill -9: no shutdown code runs."""
        assert self.process is not None
        self.process.send_signal(signal.SIGKILL)
        self.process.wait(10)

    def stop(self) -> int:
        assert self.process is not None
        if self.process.poll() is None:
            self.process.send_signal(signal.SIGTERM)
            try:
                return self.process.wait(40)
            except subprocess.TimeoutExpired:
                self.process.kill()
        return self.process.wait(10)

    def client(self) -> httpx.Client:
        return httpx.Client(base_url=self.url, timeout=30)


class Backlogged(ThreadingHTTPServer):
    # The default listen backlog of 5 drops the connections of a burst.
    request_queue_size = 1024
    daemon_threads = True


@dataclass
class Call:
    task_id: str
    attempt: int
    idempotency_key: str
    path: str
    at: float


@dataclass
class Target:
    """An HTTP server that records each call; `respond(call_number_for_path)` picks the status."""

    calls: list[Call] = field(default_factory=list)
    responses: dict[str, Callable[[int], int]] = field(default_factory=dict)
    delays: dict[str, float] = field(default_factory=dict)
    lock: threading.Lock = field(default_factory=threading.Lock)

    def start(self) -> Target:
        target = self

        class Handler(BaseHTTPRequestHandler):
            def _handle(self) -> None:
                at = time.time()
                length = int(self.headers.get("content-length") or 0)
                self.rfile.read(length)
                with target.lock:
                    target.calls.append(
                        Call(
                            self.headers.get("X-Tickwheel-Task-Id", ""),
                            int(self.headers.get("X-Tickwheel-Attempt", "0")),
                            self.headers.get("Idempotency-Key", ""),
                            self.path,
                            at,
                        )
                    )
                    count = sum(1 for c in target.calls if c.path == self.path)
                time.sleep(target.delays.get(self.path, 0))
                status = target.responses.get(self.path, lambda n: 200)(count)
                self.send_response(status)
                self.send_header("content-length", "0")
                self.end_headers()

            do_GET = do_POST = do_PUT = _handle

            def log_message(self, *args: object) -> None:
                pass

        self.server = Backlogged(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}"
        threading.Thread(target=self.server.serve_forever, daemon=True).start()
        return self

    def stop(self) -> None:
        self.server.shutdown()
        self.server.server_close()

    def calls_to(self, path: str) -> list[Call]:
        with self.lock:
            return [c for c in self.calls if c.path == path]


def wait_for(predicate: Callable[[], bool], timeout: float, interval: float = 0.05) -> bool:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if predicate():
            return True
        time.sleep(interval)
    return predicate()


@pytest.fixture(name="target")
def target_fixture() -> Iterator[Target]:
    """A target server of the test's own, stopped afterwards (a fixture the acceptance
    and fault suites' conftests both take from here)."""
    t = Target().start()
    yield t
    t.stop()
