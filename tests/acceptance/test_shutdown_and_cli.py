"""Graceful shutdown of `tickwheel up`, and the CLI against a live server."""

from __future__ import annotations

import json
import re
import signal
import subprocess
import sys
from pathlib import Path

from harness import Target, Tickwheel, wait_for

TICKWHEEL = str(Path(sys.executable).with_name("tickwheel"))


def test_sigterm_lets_a_running_task_finish_before_exit(
    tickwheel_factory: type, target: Target
) -> None:
    target.delays["/slow"] = 1.5
    tw: Tickwheel = tickwheel_factory.start()
    with tw.client() as http:
        body = {"task_type": "http", "payload": {"url": f"{target.url}/slow"}}
        task_id = http.post("/api/tasks", json=body).json()["task_id"]
        assert wait_for(lambda: len(target.calls_to("/slow")) == 1, timeout=10)
    assert tw.process is not None
    tw.process.send_signal(signal.SIGTERM)
    # uvicorn re-raises the signal once shutdown is complete, as Unix programs should.
    assert tw.process.wait(30) in (0, -signal.SIGTERM)
    again = tickwheel_factory.start(tw.db)
    with again.client() as http:
        task = http.get(f"/api/tasks/{task_id}").json()
    assert task["status"] == "succeeded"
    assert task["attempts"] == 1


def test_sigterm_gives_back_a_task_that_outlives_the_grace_period(
    tickwheel_factory: type, target: Target
) -> None:
    target.delays["/long"] = 8
    tw: Tickwheel = tickwheel_factory.start(extra_env={"TICKWHEEL_SHUTDOWN_GRACE_SECONDS": "1"})
    with tw.client() as http:
        body = {
            "task_type": "http",
            "payload": {"url": f"{target.url}/long"},
            "retry_backoff": {"base_seconds": 0.1, "max_seconds": 0.2},
        }
        task_id = http.post("/api/tasks", json=body).json()["task_id"]
        assert wait_for(lambda: len(target.calls_to("/long")) == 1, timeout=10)
    assert tw.process is not None
    tw.process.send_signal(signal.SIGTERM)
    tw.process.wait(6)  # well before the task itself would have ended
    target.delays["/long"] = 0
    again = tickwheel_factory.start(tw.db)
    with again.client() as http:
        assert wait_for(
            lambda: http.get(f"/api/tasks/{task_id}").json()["status"] == "succeeded", 20
        )
        history = http.get(f"/api/tasks/{task_id}/history").json()["executions"]
    assert [e["outcome"] for e in history] == ["succeeded", "failed"]
    assert "shut down" in history[1]["error"]


def _cli(tw: Tickwheel, *args: str) -> str:
    done = subprocess.run(
        [TICKWHEEL, *args, "--url", tw.url], capture_output=True, text=True, timeout=30
    )
    assert done.returncode == 0, done.stderr + done.stdout
    return done.stdout


def test_cli_submit_status_ls_cancel(tickwheel_factory: type) -> None:
    tw: Tickwheel = tickwheel_factory.start()
    submitted = json.loads(_cli(tw, "submit", "noop", "--delay", "3600", "--payload", '{"a": 1}'))
    task_id = submitted["task_id"]
    status = json.loads(_cli(tw, "status", task_id))
    assert status["status"] == "pending"
    assert status["payload"] == {"a": 1}
    assert task_id[:8] in _cli(tw, "ls", "--status", "pending")
    assert json.loads(_cli(tw, "cancel", task_id)) == {"ok": True, "cancelled_instances": 1}
    assert json.loads(_cli(tw, "status", task_id))["status"] == "cancelled"
    cron = json.loads(_cli(tw, "submit", "noop", "--cron", "@hourly", "--timezone", "Asia/Tokyo"))
    assert cron["schedule_id"] == cron["task_id"]
    keyed = ("submit", "noop", "--at", "2031-01-01T09:00:00+01:00", "--idempotency-key", "k1")
    first, again = json.loads(_cli(tw, *keyed)), json.loads(_cli(tw, *keyed))
    assert again["task_id"] == first["task_id"] and again["duplicate"] is True
    assert first["due_time"].startswith("2031-01-01T08:00:00")
    bad = subprocess.run(
        [TICKWHEEL, "submit", "noop", "--cron", "nope", "--url", tw.url],
        capture_output=True,
        text=True,
        timeout=30,
    )
    assert bad.returncode == 1
    assert "schedule.cron_expression" in bad.stderr


def test_unreachable_server_is_a_clear_error(tmp_path: Path) -> None:
    done = subprocess.run(
        [TICKWHEEL, "status", "x", "--url", "http://127.0.0.1:9"],
        capture_output=True,
        text=True,
        timeout=30,
    )
    assert done.returncode == 2
    assert "cannot reach" in done.stderr


DIAMOND_YAML = """\
name: diamond
tasks:
  - name: a
    task_type: noop
    payload: {day: 2026-12-01, at: 2026-12-01T03:00:00Z}
  - name: b
    task_type: noop
    dependencies: [a]
  - name: c
    task_type: noop
    dependencies: [a]
    max_retries: 1
  - name: d
    task_type: noop
    dependencies: [b, c]
"""


def test_cli_workflow_from_yaml_and_json_files(tickwheel_factory: type, tmp_path: Path) -> None:
    tw: Tickwheel = tickwheel_factory.start()
    (tmp_path / "diamond.yaml").write_text(DIAMOND_YAML)
    out = _cli(tw, "workflow", "submit", str(tmp_path / "diamond.yaml"), "--output", "table")
    match = re.search(r"workflow (\S+) \(diamond\)", out)
    assert match, out
    workflow_id = match.group(1)
    assert wait_for(
        lambda: json.loads(_cli(tw, "workflow", "show", workflow_id))["status"] == "succeeded",
        timeout=20,
    )

    recurring = tmp_path / "nightly.json"
    recurring.write_text(
        json.dumps({"name": "nightly", "tasks": [{"name": "x", "task_type": "noop"}]})
    )
    scheduled = json.loads(_cli(tw, "workflow", "submit", str(recurring), "--cron", "0 3 * * *"))
    assert scheduled["schedule_id"] == scheduled["task_id"]
    assert json.loads(_cli(tw, "status", scheduled["task_id"]))["task_type"] == "tickwheel.workflow"
    assert json.loads(_cli(tw, "workflow", "cancel", workflow_id)) == {"ok": True, "cancelled": 0}

    cycle = tmp_path / "cycle.yaml"
    cycle.write_text(
        DIAMOND_YAML.replace(
            "dependencies: [a]\n    max_retries", "dependencies: [d]\n    max_retries"
        )
    )
    bad = subprocess.run(
        [TICKWHEEL, "workflow", "submit", str(cycle), "--url", tw.url],
        capture_output=True,
        text=True,
        timeout=30,
    )
    assert bad.returncode == 1
    assert "cycle" in bad.stderr
