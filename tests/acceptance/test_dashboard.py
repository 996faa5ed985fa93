"""The dashboard in a real headless Chromium (Debian's, driven by Playwright) against a
real `tickwheel up`: what operators see changes as tasks change, without a reload."""

from __future__ import annotations

import textwrap
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
from cluster import cluster_in
from harness import Tickwheel
from playwright.sync_api import Browser, Page, expect, sync_playwright
from servers import PrivateRedis
from services import chromium

HANDLERS = """
from tickwheel import App, PermanentFailure

app = App()


@app.task("doomed", max_retries=0)
async def doomed(ctx, payload):
    raise PermanentFailure("doomed to fail")
"""
expect.set_options(timeout=15_000)

# Flags a root headless Chromium needs on this machine (no sandbox, no network chatter).
CHROMIUM_ARGS = [
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
]


@pytest.fixture(scope="module")
def browser() -> Iterator[Browser]:
    executable = chromium()
    with sync_playwright() as playwright:
        launched = playwright.chromium.launch(executable_path=executable, args=CHROMIUM_ARGS)
        yield launched
        launched.close()


@pytest.fixture
def tickwheel(tmp_path: Path) -> Iterator[Tickwheel]:
    (tmp_path / "dashboard_handlers.py").write_text(textwrap.dedent(HANDLERS))
    tw = Tickwheel(tmp_path / "tickwheel.db", app="dashboard_handlers").start()
    yield tw
    tw.stop()


@pytest.fixture
def page(browser: Browser, tickwheel: Tickwheel) -> Iterator[Page]:
    context = browser.new_context(base_url=tickwheel.url)
    opened = context.new_page()
    opened.set_default_timeout(15_000)
    yield opened
    context.close()


def submit(tw: Tickwheel, **body: Any) -> str:
    answer = httpx.post(f"{tw.url}/api/tasks", json={"task_type": "noop", **body}, timeout=10)
    answer.raise_for_status()
    return str(answer.json()["task_id"])


def in_seconds(seconds: float) -> dict[str, Any]:
    return {"type": "delayed", "delay_seconds": seconds}


def mark_loaded(page: Page) -> None:
    """A flag on the window: it survives as long as the page is never reloaded."""
    page.evaluate("window.__notReloaded = true")


def assert_not_reloaded(page: Page) -> None:
    assert page.evaluate("window.__notReloaded === true")


def test_a_task_page_shows_its_state_change_live(page: Page, tickwheel: Tickwheel) -> None:
    task_id = submit(tickwheel, schedule=in_seconds(2))
    page.goto(f"/#/task/{task_id}")
    mark_loaded(page)
    badge = page.locator("dl.fields .status").first
    expect(badge).to_have_text("pending")
    expect(badge).to_have_text("succeeded")
    expect(page.locator("tr[data-outcome]")).to_have_count(1)  # the attempt's timeline
    assert_not_reloaded(page)


def test_cancel_from_the_task_page(page: Page, tickwheel: Tickwheel) -> None:
    task_id = submit(tickwheel, schedule=in_seconds(3600))
    page.goto(f"/#/task/{task_id}")
    page.locator("#cancel").click()
    expect(page.locator("dl.fields .status").first).to_have_text("cancelled")
    answer = httpx.get(f"{tickwheel.url}/api/tasks/{task_id}", timeout=10).json()
    assert answer["status"] == "cancelled"


def test_a_blocked_tasks_page_names_its_predecessor_with_a_link(
    page: Page, tickwheel: Tickwheel
) -> None:
    first = submit(tickwheel, schedule=in_seconds(3600))
    blocked = submit(tickwheel, dependencies=[first])
    page.goto(f"/#/task/{blocked}")
    reason = page.locator("#waiting-on li[data-reason=predecessors]")
    expect(reason).to_contain_text(first)
    expect(reason.locator(".status")).to_have_text("pending")
    reason.get_by_role("link", name=first).click()
    expect(page.locator("h1 code")).to_have_text(first)
    expect(page.locator("#waiting-on li[data-reason=due]")).to_have_count(1)


def test_a_task_that_could_not_start_in_time_shows_expired_live(
    page: Page, tickwheel: Tickwheel
) -> None:
    first = submit(tickwheel, schedule=in_seconds(3600))
    doomed = submit(tickwheel, dependencies=[first], expires_after_seconds=2)
    page.goto(f"/#/task/{doomed}")
    mark_loaded(page)
    badge = page.locator("dl.fields .status").first
    expect(badge).to_have_text("blocked")
    expect(page.locator("dl.fields").first).to_contain_text("expires")
    expect(badge).to_have_text("expired")
    expect(page.locator("dl.fields").first).to_contain_text("not started before it expired")
    expect(page.locator("#cancel")).to_have_count(0)  # an expired task has ended
    assert_not_reloaded(page)
    page.goto("/")
    expect(page.locator("#counts [data-state=expired] .n")).to_have_text("1")
    page.goto("/#/tasks?status=expired")
    expect(page.locator("tr[data-task-id]")).to_have_count(1)
    expect(page.locator("tr[data-task-id]").first).to_have_attribute("data-task-id", doomed)


def test_the_limits_page_shows_use_and_the_tasks_a_limit_holds(
    page: Page, tickwheel: Tickwheel
) -> None:
    limit = httpx.put(f"{tickwheel.url}/api/limits/key/slow-api", json={"rate": "1/m"}, timeout=10)
    assert limit.status_code == 200, limit.text
    ids = [submit(tickwheel, limit_key="slow-api") for _ in range(4)]
    page.goto("/#/limits")
    row = page.locator("tr[data-limit='key:slow-api']")
    expect(row).to_contain_text("1/m")
    expect(row.locator("td[data-held]")).to_have_text("3")
    row.get_by_role("link", name="3").click()
    rows = page.locator("tr[data-task-id]")
    expect(rows).to_have_count(3)
    held = rows.first.get_attribute("data-task-id")
    assert held in ids
    rows.first.click()
    mark_loaded(page)
    expect(page.locator("dl.fields .status").first).to_have_text("ready")
    expect(page.locator("#waiting-on li[data-reason=limit]")).to_contain_text("slow-api")
    expect(page.locator("dl.fields").first).to_contain_text("limit key")
    # Removing the limit lets what it held go: the page follows, never reloaded.
    assert httpx.delete(f"{tickwheel.url}/api/limits/key/slow-api", timeout=10).status_code == 204
    expect(page.locator("dl.fields .status").first).to_have_text("succeeded")
    assert_not_reloaded(page)


def test_the_task_list_filters_and_finds_by_id(page: Page, tickwheel: Tickwheel) -> None:
    later = [submit(tickwheel, schedule=in_seconds(3600)) for _ in range(3)]
    page.goto("/#/tasks?status=pending")
    rows = page.locator("tr[data-task-id]")
    expect(rows).to_have_count(3)
    page.locator("input[name=q]").fill(later[1])
    page.get_by_role("button", name="Filter").click()
    expect(rows).to_have_count(1)
    expect(rows.first).to_have_attribute("data-task-id", later[1])
    rows.first.click()
    expect(page.locator("h1 code")).to_have_text(later[1])


def test_a_workflow_graph_colours_its_nodes_by_state_live(page: Page, tickwheel: Tickwheel) -> None:
    workflow = {
        "name": "diamond",
        "tasks": [
            {"name": "extract", "task_type": "noop", "schedule": in_seconds(2)},
            {"name": "left", "task_type": "noop", "dependencies": ["extract"]},
            {"name": "right", "task_type": "noop", "dependencies": ["extract"]},
            {"name": "load", "task_type": "noop", "dependencies": ["left", "right"]},
        ],
    }
    answer = httpx.post(f"{tickwheel.url}/api/workflows", json=workflow, timeout=10)
    answer.raise_for_status()
    page.goto(f"/#/workflow/{answer.json()['workflow_id']}")
    mark_loaded(page)
    nodes = page.locator("svg g.node")
    expect(nodes).to_have_count(4)
    expect(page.locator("g.node[data-name=load]")).to_have_attribute("data-status", "blocked")
    expect(page.locator("g.node[data-status=succeeded]")).to_have_count(4)
    assert_not_reloaded(page)


def test_overview_counts_move_as_tasks_run(page: Page, tickwheel: Tickwheel) -> None:
    page.goto("/")
    mark_loaded(page)
    succeeded = page.locator("#counts [data-state=succeeded] .n")
    expect(succeeded).to_have_text("0")
    for _ in range(5):  # pending long enough to be seen through the counts' 2 s cache
        submit(tickwheel, schedule=in_seconds(5))
    expect(page.locator("#counts [data-state=pending] .n")).not_to_have_text("0")
    expect(succeeded).to_have_text("5")
    expect(page.locator(".chart[data-series=succeeded]")).to_be_visible()
    assert_not_reloaded(page)


def test_dead_letters_are_listed_and_redriven(page: Page, tickwheel: Tickwheel) -> None:
    task_id = submit(tickwheel, task_type="doomed")
    page.goto("/#/dead")
    row = page.locator(f"tr[data-task-id='{task_id}']")
    expect(row).to_contain_text("doomed to fail")
    row.get_by_role("button", name="Re-drive").click()
    history = f"{tickwheel.url}/api/tasks/{task_id}/history"
    for _ in range(100):  # re-driven, it runs (and fails) a second time
        if len(httpx.get(history, timeout=10).json()["executions"]) == 2:
            break
        page.wait_for_timeout(100)
    else:
        raise AssertionError("the re-driven task never ran again")


def test_schedules_show_next_fire_and_pause(page: Page, tickwheel: Tickwheel) -> None:
    schedule = {"type": "cron", "cron_expression": "*/5 * * * *", "jitter_seconds": 7}
    schedule_id = submit(tickwheel, schedule=schedule)
    page.goto("/#/schedules")
    row = page.locator(f"tr[data-schedule-id='{schedule_id}']")
    expect(row).to_contain_text("*/5 * * * *")
    expect(row).to_contain_text("7 s")
    # the schedule's own status, not its last run's (the cron may fire meanwhile)
    state = row.locator(".schedule-status .status")
    expect(state).to_have_text("active")
    row.get_by_role("button", name="Pause").click()
    expect(state).to_have_text("paused")


def test_a_schedules_page_previews_its_fire_times_through_daylight_saving(
    page: Page, tickwheel: Tickwheel
) -> None:
    # Monthly in New York: ten months from any day cross at least one change (they are
    # at most eight months apart).
    schedule = {"type": "cron", "cron_expression": "0 9 1 * *", "timezone": "America/New_York"}
    schedule_id = submit(tickwheel, schedule=schedule)
    preview = httpx.get(f"{tickwheel.url}/api/schedules/{schedule_id}/next", timeout=10).json()
    page.goto(f"/#/task/{schedule_id}")
    rows = page.locator("#fire-times tbody tr")
    expect(rows).to_have_count(10)
    expect(page.locator("#fire-times h2")).to_contain_text("America/New_York")
    for i, fire in enumerate(preview["fire_times"]):
        expect(rows.nth(i)).to_contain_text(fire["local_time"][:16].replace("T", " "))
        expect(rows.nth(i)).to_have_attribute("data-change", fire["clock_change"] or "")
        if fire["note"]:
            expect(rows.nth(i)).to_contain_text(fire["note"])
    expect(rows.first).to_contain_text("09:00")
    changed = page.locator("#fire-times tbody tr:not([data-change=''])")
    expect(changed.first).to_contain_text("clocks move")
    httpx.post(f"{tickwheel.url}/api/tasks/{schedule_id}/pause", timeout=10).raise_for_status()
    page.reload()
    expect(page.locator("#fire-times h2")).to_contain_text("paused: none of these fires")


def test_nodes_show_the_scheduler_and_the_worker(page: Page, tickwheel: Tickwheel) -> None:
    page.goto("/#/nodes")
    expect(page.locator("tr[data-node-id]")).to_have_count(1)
    expect(page.locator("tr[data-node-id]")).to_contain_text("16:")  # all 16 partitions
    expect(page.locator("tr[data-worker-id]")).to_have_count(1)
    expect(page.locator("tr[data-worker-id]")).to_contain_text("doomed")  # its App's types


def test_an_outage_of_the_ready_queue_shows_a_banner_until_it_is_back(
    browser: Browser, tmp_path: Path, private_redis: PrivateRedis
) -> None:
    """An API on the suite's private Redis loses it: the page stays up and says what is
    down, and the banner leaves when Redis is back."""
    with cluster_in(tmp_path, redis_url=private_redis.url) as cluster:
        cluster.start_api()
        context = browser.new_context(base_url=cluster.api_url)
        try:
            page = context.new_page()
            page.goto("/")
            expect(page.locator("#live")).to_have_text("live")
            banner = page.locator("#outage")
            expect(banner).to_be_hidden()
            private_redis.stop()
            try:
                expect(banner).to_be_visible()
                expect(banner).to_contain_text("the ready queue")
            finally:
                private_redis.start()
            expect(banner).to_be_hidden()
        finally:
            context.close()
