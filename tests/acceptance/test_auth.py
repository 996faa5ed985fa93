"""API tokens and scopes against a live server."""

from __future__ import annotations

import json
import subprocess
import sys
import time
from pathlib import Path

import httpx
import pytest
from harness import Tickwheel

from tickwheel import Client, Forbidden, Unauthorized

TICKWHEEL = str(Path(sys.executable).with_name("tickwheel"))


def _token(db: Path, scopes: str) -> str:
    done = subprocess.run(
        [TICKWHEEL, "token", "create", "--scopes", scopes, "--database-url", f"sqlite:///{db}"],
        capture_output=True,
        text=True,
        timeout=30,
    )
    assert done.returncode == 0, done.stderr
    return str(json.loads(done.stdout)["token"])  # JSON when not on a terminal


def test_scopes_gate_every_route_once_a_token_exists(
    tickwheel_factory: type, tmp_path: Path
) -> None:
    tw: Tickwheel = tickwheel_factory.start()
    with tw.client() as http:
        assert http.post("/api/tasks", json={"task_type": "noop"}).status_code == 201  # open
    reader = _token(tw.db, "read")
    submitter = _token(tw.db, "submit,read")
    worker = _token(tw.db, "worker")
    time.sleep(1.2)  # the server re-reads tokens every second

    def call(token: str | None, method: str, path: str, **kwargs: object) -> int:
        headers = {"Authorization": f"Bearer {token}"} if token else {}
        with httpx.Client(base_url=tw.url, timeout=30) as http:
            return http.request(method, path, headers=headers, **kwargs).status_code  # type: ignore[arg-type]

    task = {"json": {"task_type": "noop"}}
    claim = {"json": {"worker_id": "w", "wait_seconds": 0}}
    assert call(None, "GET", "/api/tasks") == 401
    assert call("tw_not-a-token", "GET", "/api/tasks") == 401
    assert call(reader, "GET", "/api/tasks") == 200
    assert call(reader, "POST", "/api/tasks", **task) == 403
    with httpx.Client(base_url=tw.url, timeout=30) as http:
        refused = http.post("/api/tasks", headers={"Authorization": f"Bearer {reader}"}, **task)  # type: ignore[arg-type]
        assert "lacks the 'submit' scope" in refused.text, refused.text
    assert call(submitter, "POST", "/api/tasks", **task) == 201
    assert call(submitter, "DELETE", "/api/tasks/x") == 403  # cancel is admin
    assert call(submitter, "POST", "/api/worker/claim", **claim) == 403
    assert call(worker, "POST", "/api/worker/claim", **claim) == 200
    assert call(None, "GET", "/healthz") == 200  # probes stay open
    assert reader not in tw.log.read_text() and submitter not in tw.log.read_text()

    # The Python client sends its token and raises typed errors.
    with Client(tw.url, token=submitter) as client:
        submitted = client.submit("noop", delay_seconds=3600)
        assert client.get(submitted.task_id).status == "pending"
        with pytest.raises(Forbidden):
            client.cancel(submitted.task_id)
    with Client(tw.url, token="tw_not-a-token") as client, pytest.raises(Unauthorized):
        client.list_tasks()


def test_no_token_means_loopback_only_unless_insecure(tmp_path: Path) -> None:
    db = tmp_path / "bind.db"
    refused = subprocess.run(
        [TICKWHEEL, "up", "--host", "0.0.0.0", "--port", "0", "--database-url", f"sqlite:///{db}"],
        capture_output=True,
        text=True,
        timeout=30,
    )
    assert refused.returncode == 2
    assert "--insecure" in refused.stderr
    insecure = Tickwheel(db, extra_env={"TICKWHEEL_HOST": "0.0.0.0", "TICKWHEEL_INSECURE": "1"})
    insecure.start()
    try:
        assert httpx.get(f"{insecure.url}/healthz", timeout=5).status_code == 200
    finally:
        insecure.stop()
