"""The shell worker of examples/ runs tasks from a live server over the worker protocol."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import httpx
from harness import Tickwheel, wait_for

ROOT = Path(__file__).resolve().parents[2]
TICKWHEEL = str(Path(sys.executable).with_name("tickwheel"))


def test_the_shell_worker_completes_and_fails_tasks(
    tickwheel_factory: type, tmp_path: Path
) -> None:
    tw: Tickwheel = tickwheel_factory.start()
    output = tmp_path / "greetings.txt"
    with tw.client() as http:
        ids = [
            http.post(
                "/api/tasks", json={"task_type": "greet", "queue": "shell", "payload": payload}
            ).json()["task_id"]
            for payload in ({"name": "Ada"}, {"name": "Grace"}, {"fail": True})
        ]
        run = subprocess.run(
            [str(ROOT / "examples/shell-worker/worker.sh"), "3"],
            env={**tw.env, "TICKWHEEL_URL": tw.url, "OUTPUT": str(output)},
            capture_output=True,
            text=True,
            timeout=60,
        )
        assert run.returncode == 0, run.stderr
        assert wait_for(
            lambda: (
                [http.get(f"/api/tasks/{i}").json()["status"] for i in ids]
                == ["succeeded", "succeeded", "failed"]
            ),
            timeout=10,
        )
        assert http.get(f"/api/tasks/{ids[2]}").json()["last_error"] == "asked to fail"
    assert output.read_text().splitlines() == ["hello Ada", "hello Grace"]


def test_the_shell_worker_prints_a_refused_result(tickwheel_factory: type, tmp_path: Path) -> None:
    """The task is cancelled while the worker runs it (blocked writing to a FIFO): its
    result is refused with 409, and the worker says so on stderr and goes on."""
    tw: Tickwheel = tickwheel_factory.start()
    output = tmp_path / "greetings.fifo"
    os.mkfifo(output)
    with tw.client() as http:
        task_id = http.post(
            "/api/tasks", json={"task_type": "greet", "queue": "shell", "payload": {"name": "Ada"}}
        ).json()["task_id"]
        worker = subprocess.Popen(
            [str(ROOT / "examples/shell-worker/worker.sh"), "1"],
            env={**tw.env, "TICKWHEEL_URL": tw.url, "OUTPUT": str(output)},
            stderr=subprocess.PIPE,
            text=True,
        )
        try:
            assert wait_for(
                lambda: http.get(f"/api/tasks/{task_id}").json()["status"] == "running",
                timeout=20,
            )
            assert http.delete(f"/api/tasks/{task_id}").status_code == 200
            fence = http.get(f"/api/tasks/{task_id}/history").json()["executions"][0]["fence"]
            assert output.read_text() == "hello Ada\n"  # lets the handler finish
            _, stderr = worker.communicate(timeout=30)
        finally:
            worker.kill()
    assert worker.returncode == 0, stderr
    assert f"task {task_id}: result refused, fence {fence} is stale" in stderr


def test_the_shell_worker_sends_its_token(tickwheel_factory: type, tmp_path: Path) -> None:
    """Once tokens exist, a worker without one stops with the API's answer; with one
    (TICKWHEEL_TOKEN, as for the CLI, or --token) it runs tasks."""
    tw: Tickwheel = tickwheel_factory.start()
    made = subprocess.run(
        [TICKWHEEL, "token", "create", "--scopes", "worker,submit,read", "--database-url",
         f"sqlite:///{tw.db}"],
        capture_output=True, text=True, timeout=30, check=True,
    )  # fmt: skip
    token = json.loads(made.stdout)["token"]
    worker = str(ROOT / "examples/shell-worker/worker.sh")
    output = tmp_path / "greetings.txt"
    environ = {**tw.env, "TICKWHEEL_URL": tw.url, "OUTPUT": str(output)}
    with httpx.Client(base_url=tw.url, headers={"Authorization": f"Bearer {token}"}) as http:
        assert wait_for(lambda: http.get("/api/tasks").status_code == 200, timeout=10)
        for name in ("Ada", "Grace"):
            body = {"task_type": "greet", "queue": "shell", "payload": {"name": name}}
            assert http.post("/api/tasks", json=body).status_code == 201
    refused = subprocess.run([worker, "1"], env=environ, capture_output=True, text=True, timeout=60)
    assert refused.returncode == 1
    assert "claim refused (HTTP 401)" in refused.stderr and "unauthorized" in refused.stderr
    for words, extra in (
        ([worker, "1"], {"TICKWHEEL_TOKEN": token}),
        ([worker, "--token", token, "1"], {}),
    ):
        run = subprocess.run(
            words, env={**environ, **extra}, capture_output=True, text=True, timeout=60
        )
        assert run.returncode == 0, run.stderr
    assert sorted(output.read_text().splitlines()) == ["hello Ada", "hello Grace"]
