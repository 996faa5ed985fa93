"""Every command of the CLI against a live `tickwheel up`: what it prints as JSON (not on
a terminal) and as a table at 80 columns (ids whole), and how it refuses."""

from __future__ import annotations

import json
import os
import pty
import re
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from harness import Tickwheel, wait_for

TICKWHEEL = str(Path(sys.executable).with_name("tickwheel"))
ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture(scope="module")
def tw(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Tickwheel]:
    server = Tickwheel(tmp_path_factory.mktemp("cli") / "tickwheel.db").start()
    yield server
    server.stop()


def run(
    tw: Tickwheel | None, *words: str, env: dict[str, str] | None = None
) -> tuple[int, str, str]:
    """`tickwheel WORDS` (against `tw`): exit status, stdout, stderr."""
    url = ["--url", tw.url] if tw is not None else []
    done = subprocess.run(
        [TICKWHEEL, *words, *url],
        capture_output=True,
        text=True,
        timeout=60,
        env={**os.environ, "COLUMNS": "80", **(env or {})},
    )
    return done.returncode, done.stdout, done.stderr


def ok(tw: Tickwheel | None, *words: str) -> Any:
    """The JSON a command prints when its stdout is not a terminal."""
    code, out, err = run(tw, *words)
    assert code == 0, err + out
    return json.loads(out)


def table(tw: Tickwheel | None, *words: str) -> str:
    code, out, err = run(tw, *words, "--output", "table")
    assert code == 0, err + out
    assert all(len(line) <= 80 for line in out.splitlines()), out
    return out


def submit(tw: Tickwheel, *words: str) -> str:
    return str(ok(tw, "submit", *words)["task_id"])


def test_submit_quiet_prints_only_the_id(tw: Tickwheel) -> None:
    code, out, _ = run(tw, "submit", "noop", "--quiet")
    assert code == 0 and ok(tw, "status", out.strip())["task_id"] == out.strip()
    code, _, err = run(tw, "submit", "noop", "--quiet", "--output", "json")
    assert code == 2 and "--quiet and --output cannot be used together" in err


def test_version() -> None:
    code, out, _ = run(None, "--version")
    assert code == 0 and out.startswith("tickwheel 0.")


def test_ls_status_and_history_print_whole_ids_at_80_columns(tw: Tickwheel) -> None:
    first = submit(tw, "noop", "--payload", '{"n": 1}')
    failing = submit(
        tw, "http", "--payload", json.dumps({"url": f"{tw.url}/nowhere"}), "--max-retries", "0"
    )
    assert ok(tw, "wait", first, "--timeout", "30")["status"] == "succeeded"
    listed = table(tw, "ls")
    assert first in listed and failing in listed
    assert first in table(tw, "status", first)
    assert ok(tw, "status", first)["payload"] == {"n": 1}
    page = ok(tw, "ls", "--status", "succeeded", "--type", "noop", "--limit", "1")
    assert [t["task_id"] for t in page["tasks"]] == [first] and page["next_token"]
    assert ok(tw, "ls", "--find", first)["tasks"][0]["task_id"] == first
    history = ok(tw, "history", first)["executions"]
    assert [e["outcome"] for e in history] == ["succeeded"]
    assert "succeeded" in table(tw, "history", first)


def test_a_table_on_a_terminal_json_elsewhere(tw: Tickwheel) -> None:
    task_id = submit(tw, "noop", "--delay", "3600")
    main, child = pty.openpty()
    with subprocess.Popen(
        [TICKWHEEL, "status", task_id, "--url", tw.url],
        stdout=child,
        stderr=subprocess.PIPE,
        env={**os.environ, "COLUMNS": "80"},
    ) as process:
        os.close(child)
        shown = b""
        while True:
            try:
                chunk = os.read(main, 4096)
            except OSError:  # the child closed the terminal
                break
            if not chunk:
                break
            shown += chunk
        assert process.wait(30) == 0
    os.close(main)
    assert f"task_id:             {task_id}" in shown.decode()
    # Why it is not running, as a sentence rather than JSON.
    assert re.search(r"waiting_on: +not due until 20", shown.decode()), shown.decode()
    assert ok(tw, "status", task_id)["task_id"] == task_id  # piped: JSON


def test_wait_exits_1_for_a_failed_task_and_redrive_sends_it_back(tw: Tickwheel) -> None:
    failing = submit(
        tw, "http", "--payload", json.dumps({"url": f"{tw.url}/nowhere"}), "--max-retries", "0"
    )
    code, out, _ = run(tw, "wait", failing, "--timeout", "30")
    assert code == 1 and json.loads(out)["status"] == "failed"
    assert ok(tw, "redrive", failing) == {"redriven": [failing], "skipped": []}
    never = submit(tw, "noop", "--delay", "3600")
    code, _, err = run(tw, "wait", never, "--timeout", "0.3")
    assert code == 1 and err.count("\n") == 1 and "not finished in time" in err


def test_priority_cancel_and_batch(tw: Tickwheel, tmp_path: Path) -> None:
    task_id = submit(tw, "noop", "--delay", "3600", "--priority", "1", "--queue", "later")
    assert ok(tw, "priority", task_id, "7")["priority"] == 7
    assert ok(tw, "ls", "--queue", "later")["tasks"][0]["task_id"] == task_id
    assert ok(tw, "cancel", task_id) == {"ok": True, "cancelled_instances": 1}
    batch = tmp_path / "batch.yaml"
    batch.write_text("- {task_type: noop}\n- {task_type: noop, payload: {n: 2}}\n")
    submitted = ok(tw, "batch", str(batch))
    assert [t["status"] for t in submitted] == ["pending", "pending"]
    shown = table(tw, "batch", str(batch))  # a second batch, as a table
    assert len(re.findall(r"^[0-9a-f]{8}-[0-9a-f-]{27}  pending", shown, re.M)) == 2
    batch.write_text("name: not a batch\n")
    code, _, err = run(tw, "batch", str(batch))
    assert code == 2 and "a batch is a list" in err
    code, _, err = run(tw, "batch", str(ROOT / "README.md"))
    assert code == 2 and err.startswith("tickwheel: FILE: ") and err.count("\n") == 1


def test_pause_resume_and_schedules(tw: Tickwheel) -> None:
    cron = submit(tw, "noop", "--cron", "0 3 * * *", "--timezone", "Europe/Paris")
    assert ok(tw, "pause", cron)["schedule"]["schedule_status"] == "paused"
    paused = ok(tw, "schedules", "--status", "paused")["schedules"]
    assert [s["schedule_id"] for s in paused] == [cron]
    assert cron in table(tw, "schedules", "--status", "paused")
    assert ok(tw, "resume", cron)["schedule"]["schedule_status"] == "active"
    active = ok(tw, "schedules")["schedules"]
    assert any(s["schedule_id"] == cron and s["next_fire_time"] for s in active)
    (listed,) = [s for s in active if s["schedule_id"] == cron]
    fires = ok(tw, "fire-times", cron, "--count", "60")["fire_times"]
    assert fires[0]["fire_time"] == listed["next_fire_time"] and len(fires) == 60
    # Before submitting: a year of Sundays in Paris crosses both changes, told in words.
    shown = table(
        tw, "fire-times", "--cron", "0 3 * * 0", "--timezone", "Europe/Paris", "--count", "60"
    )
    assert "clocks move forward 1 h" in shown and "clocks move back 1 h" in shown
    assert "+01:00" in shown and "+02:00" in shown
    utc = table(tw, "fire-times", "--cron", "0 3 * * *", "--count", "1")
    assert re.search(r"03:00:00 +\d{4}-\d\d-\d\d 03:00 \+00:00", utc), utc


def test_queues_nodes_and_health(tw: Tickwheel) -> None:
    queues = ok(tw, "queues")
    assert queues["admitting"] is True and "default" in queues["depth"]
    nodes = ok(tw, "nodes")
    (node,) = nodes["schedulers"]
    assert len(node["partitions"]) == nodes["partition_count"]
    assert node["node_id"] in table(tw, "nodes")
    assert ok(tw, "health")["ok"] is True
    stats = ok(tw, "stats")
    assert stats["counts"]["succeeded"] >= 0 and "trigger" in stats["lateness_ms"]
    assert "succeeded" in table(tw, "stats")
    code, out, _ = run(tw, "metrics")
    assert code == 0 and "# TYPE tickwheel_task_events_total counter" in out
    assert "default" in table(tw, "queues")


def test_limits_set_list_and_delete(tw: Tickwheel) -> None:
    limit = ok(tw, "limits", "set", "key", "acme/eu-1", "--rate", "10/m", "--concurrency", "3")
    assert (limit["scope"], limit["name"], limit["rate"], limit["concurrency"]) == (
        "key",
        "acme/eu-1",
        "10/m",
        3,
    )
    assert [(x["scope"], x["name"]) for x in ok(tw, "limits")] == [("key", "acme/eu-1")]
    shown = table(tw, "limits")
    assert "acme/eu-1" in shown and "10/m" in shown
    code, _, err = run(tw, "limits", "set", "key", "acme", "--rate", "lots")
    assert code == 1 and "rate" in err and len(err.splitlines()) == 1
    code, _, err = run(tw, "limits", "set", "queue", "q")
    assert code == 2 and "--rate" in err
    code, out, _ = run(tw, "limits", "delete", "key", "acme/eu-1")
    assert code == 0 and "removed" in out
    assert ok(tw, "limits") == []
    code, _, err = run(tw, "limits", "delete", "key", "acme/eu-1")
    assert code == 1 and "no limit" in err


def test_workflows_print_whole_ids_at_80_columns(tw: Tickwheel) -> None:
    etl = str(ROOT / "examples/workflows/etl.yaml")
    shown = table(tw, "workflow", "submit", etl)
    workflow_id = shown.split()[1]
    workflow = ok(tw, "workflow", "show", workflow_id)
    assert workflow["name"] == "nightly-etl" and len(workflow["tasks"]) == 4
    assert all(t["task_id"] in shown for t in workflow["tasks"])
    assert wait_for(lambda: ok(tw, "workflow", "show", workflow_id)["status"] == "succeeded", 30)
    listed = ok(tw, "workflow", "ls")["workflows"]
    assert workflow_id in {w["workflow_id"] for w in listed}
    assert workflow_id in table(tw, "workflow", "ls")
    assert ok(tw, "workflow", "cancel", workflow_id) == {"ok": True, "cancelled": 0}
    code, _, err = run(tw, "workflow", "submit", etl, "--timezone", "UTC")
    assert code == 2 and "--timezone applies only with --cron" in err


@pytest.mark.parametrize(
    ("words", "named"),
    [
        (["submit", "noop", "--delay", "1", "--cron", "* * * * *"], "--delay and --cron"),
        (["submit", "noop", "--at", "2031-01-01T00:00:00Z", "--delay", "1"], "--delay and --at"),
        (["submit", "noop", "--timezone", "UTC"], "--timezone applies only with --cron"),
        (["submit", "noop", "--jitter-seconds", "3"], "--jitter-seconds applies only with --cron"),
        (["fire-times", "some-id", "--cron", "@daily"], "a SCHEDULE_ID or --cron"),
        (["fire-times", "some-id", "--timezone", "UTC"], "--timezone applies only with --cron"),
    ],
)
def test_conflicting_flags_are_refused(words: list[str], named: str) -> None:
    code, out, err = run(None, *words, "--url", "http://127.0.0.1:9")
    assert code == 2 and out == ""
    assert named in err.replace("--at and --delay", "--delay and --at")
    assert err.count("\n") == 1


@pytest.mark.parametrize(
    ("url", "said"),
    [
        ("http://127.0.0.1:8799x", "is not a server URL"),
        ("127.0.0.1:8700", "is not a server URL"),
        ("http://127.0.0.1:9", "cannot reach http://127.0.0.1:9"),
    ],
)
def test_a_bad_or_unreachable_url_is_one_line(url: str, said: str) -> None:
    code, out, err = run(None, "ls", "--url", url)
    assert code == 2 and out == ""
    assert said in err and err.count("\n") == 1 and "Traceback" not in err


def test_tokens_print_their_id_and_are_sent(tmp_path: Path, tickwheel_factory: type) -> None:
    server: Tickwheel = tickwheel_factory.start(tmp_path / "tokens.db")
    database = ["--database-url", f"sqlite:///{server.db}"]
    made = ok(None, "token", "create", "--scopes", "read,submit", "--name", "ci", *database)
    assert set(made) == {"token_id", "name", "scopes", "token"}
    assert (made["name"], made["scopes"]) == ("ci", "read,submit")
    shown = table(None, "token", "create", "--name", "other", *database)
    assert "token:" in shown
    listed = table(None, "token", "list", *database)
    assert made["token_id"] in listed and made["token"] not in listed
    assert wait_for(lambda: run(server, "ls")[0] == 1, timeout=10)  # tokens now needed
    code, _, err = run(server, "ls")
    assert "Unauthorized" in err and err.count("\n") == 1
    assert ok(server, "ls", "--token", made["token"])["tasks"] == []
    code, _, _ = run(server, "ls", env={"TICKWHEEL_TOKEN": made["token"]})
    assert code == 0
    code, out, _ = run(None, "token", "revoke", made["token_id"], *database)
    assert code == 0 and made["token_id"] in out
    code, _, err = run(None, "token", "revoke", made["token_id"], *database)
    assert code == 1 and "no active token" in err


@pytest.mark.parametrize(
    ("url", "said"),
    [
        ("sqlite:////nonexistent/folder/x.db", "unable to open database file"),
        ("postgresql://me:secret@127.0.0.1:1/x", "postgresql://me:***@127.0.0.1:1/x"),
        ("mysql://x", "unsupported database URL scheme"),
    ],
)
def test_a_store_that_cannot_open_is_one_line(url: str, said: str) -> None:
    code, _, err = run(None, "token", "list", "--database-url", url)
    assert code == 2 and said in err and err.count("\n") == 1 and "secret" not in err
