"""The shell worker of examples/ runs tasks from a live server over the worker protocol."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

from harness import Tickwheel, wait_for

ROOT = Path(__file__).resolve().parents[2]


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
