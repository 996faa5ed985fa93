"""The README's tour runs as printed against a real `tickwheel up`."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from datetime import datetime, timedelta
from pathlib import Path

from harness import Tickwheel
from servers import PrivateRedis
from services import require

ROOT = Path(__file__).resolve().parents[2]


def marked_blocks(marker: str, language: str) -> list[str]:
    """The code blocks of `language` between `<!-- marker:start -->` and its end."""
    readme = (ROOT / "README.md").read_text()
    part = readme.split(f"<!-- {marker}:start -->")[1].split(f"<!-- {marker}:end -->")[0]
    return re.findall(rf"```{language}\n(.*?)```", part, flags=re.DOTALL)


def run_shell(blocks: list[str], tw: Tickwheel) -> str:
    """The blocks as one bash script against `tw` (they name the default port)."""
    script = "\n".join(blocks).replace(":8700", f":{tw.port}")
    result = subprocess.run(
        ["bash", "-euo", "pipefail", "-c", script],
        cwd=ROOT,
        env={**tw.env, "TICKWHEEL_URL": tw.url},
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert result.returncode == 0, result.stderr + result.stdout
    return result.stdout


def run_python(block: str, tw: Tickwheel) -> str:
    done = subprocess.run(
        [sys.executable, "-c", block.replace(":8700", f":{tw.port}")],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=90,
    )
    assert done.returncode == 0, done.stderr
    return done.stdout


def test_readme_opens_with_the_two_setup_commands() -> None:
    readme = (ROOT / "README.md").read_text()
    setup = readme.split("## Set up")[1].split("##")[0]
    commands = [
        line.split("#")[0].strip()
        for line in re.findall(r"```sh\n(.*?)```", setup, re.S)[0].splitlines()
    ]
    assert commands == ["make up", "make test"]


def test_tour_runs_verbatim(tickwheel_factory: type) -> None:
    tw: Tickwheel = tickwheel_factory.start()
    out = run_shell(marked_blocks("tour", "sh"), tw)
    assert '"status":"succeeded"' in out  # the http task, after its due time
    assert '"outcome":"succeeded"' in out  # its history
    assert '"status":"failed"' in out and "HTTP 404" in out  # the failing task
    assert '"cancelled_instances":1' in out  # the cron task, disabled
    assert '"field":"schedule.cron_expression"' in out  # bad input named
    assert "noop" in out  # the CLI listing
    assert '"duplicate":true' in out  # the repeated idempotency key
    assert out.count('"status":"pending"') >= 2  # the batch


def test_client_examples_run_verbatim(tickwheel_factory: type) -> None:
    tw: Tickwheel = tickwheel_factory.start()
    sync, asynchronous = [run_python(block, tw) for block in marked_blocks("client", "python")]
    assert " pending\nsucceeded\nTrue True\nnot found: " in sync
    assert asynchronous == "1000 submitted\nsucceeded\n"


def test_cli_examples_run_verbatim(tickwheel_factory: type) -> None:
    tw: Tickwheel = tickwheel_factory.start()
    out = run_shell(marked_blocks("cli", "sh"), tw)
    assert '"status": "succeeded"' in out  # wait
    assert re.search(r"^attempt +outcome .*\n1 +succeeded ", out, re.M)  # history, a table
    assert '"status": "failed"' in out and '"redriven": [' in out
    assert '"priority": 50' in out and '"cancelled_instances": 1' in out
    assert '"schedule_status": "paused"' in out and '"schedule_status": "active"' in out
    assert '"admitting": true' in out and "scheduler" in out
    assert re.search(r"^succeeded +[1-9]", out, re.M)  # stats, as a table
    assert out.rstrip().endswith("tickwheel 0.1.0")


def test_the_expiry_example_runs_verbatim(tickwheel_factory: type) -> None:
    tw: Tickwheel = tickwheel_factory.start()
    task = json.loads(run_shell(marked_blocks("expiry", "sh"), tw))  # not a terminal: JSON
    due, expires = (datetime.fromisoformat(task[k]) for k in ("due_time", "expires_at"))
    assert task["status"] == "pending" and expires - due == timedelta(seconds=30)


def test_the_limits_example_runs_verbatim(tickwheel_factory: type) -> None:
    tw: Tickwheel = tickwheel_factory.start()
    out = run_shell(marked_blocks("limits", "sh"), tw)  # not a terminal: JSON
    listed = json.loads(out[out.rindex("\n[") :])
    assert [(x["scope"], x["name"], x["rate"], x["concurrency"]) for x in listed] == [
        ("key", "acme", "10/m", None),
        ("task_type", "send_email", "100/s", 20),
    ]


def test_workflow_examples_run_verbatim(tickwheel_factory: type) -> None:
    tw: Tickwheel = tickwheel_factory.start()
    out = run_shell(marked_blocks("workflows", "sh"), tw)
    assert '"name": "nightly-etl"' in out and '"load"' in out  # the workflow, as JSON
    assert '"schedule_id"' in out  # the recurring one
    assert '"status":"blocked"' in out  # the dependent task, accepted as stored
    assert '"field":"tasks"' in out and "a -> b -> a" in out  # the cycle, named

    (block,) = marked_blocks("workflow-python", "python")
    assert run_python(block, tw) == "['extract', 'clean', 'load']\n0 3 * * *\n"


def test_bench_compare_runs_verbatim(private_redis: PrivateRedis) -> None:
    """The README's quick comparison: Tickwheel in both modes and Huey, every task run.
    Its Redis is a private one: the harness deletes Huey's keys by their fixed names."""
    (block,) = marked_blocks("bench", "sh")
    env = {
        **os.environ,
        "TICKWHEEL_BENCH_DATABASE_URL": require("postgres"),
        "TICKWHEEL_BENCH_REDIS_URL": private_redis.url,
        "TICKWHEEL_BENCH_SINK_URL": private_redis.url,
    }
    done = subprocess.run(
        ["bash", "-euo", "pipefail", "-c", block],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    assert "Tickwheel and its peers on this machine" in done.stdout
    result = json.loads(done.stdout.strip().splitlines()[-1])
    rows = {row["system"]: row for row in result["rows"]}
    assert list(rows) == ["tickwheel-distributed", "tickwheel-embedded", "huey"]
    for row in rows.values():
        assert row["error"] is None
        assert row["e2e_unfinished"] == 0
        assert row["burst_never_ran"] == 0
        assert row["repeats"] == 0
        assert row["submitted_per_s"] > 0 and row["drained_per_s"] > 0
    assert rows["huey"]["drained_vs_fastest_peer"] == 1.0  # the only peer
    assert rows["tickwheel-distributed"]["drained_vs_fastest_peer"] is not None
    assert result["machine"]["cores"] == os.cpu_count()
