"""The shell worker of examples/ runs tasks from a live server over the worker protocol."""

from __future__ import annotations

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
