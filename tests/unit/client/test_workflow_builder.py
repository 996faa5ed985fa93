"""`Workflow`: what a graph built in code sends to the API."""

from __future__ import annotations

import pytest

from tickwheel import Workflow


def test_the_body_names_each_task_and_what_it_waits_for() -> None:
    flow = Workflow("etl")
    extract = flow.task("extract", "fetch", {"day": 1}, queue="io")
    flow.task("load", "store", after=[extract], max_retries=5, ordering_key="warehouse")
    body = flow.body(idempotency_key="etl-day-1")
    assert body["name"] == "etl" and body["idempotency_key"] == "etl-day-1"
    extract_body, load_body = body["tasks"]
    assert (extract_body["name"], extract_body["queue"], extract_body["dependencies"]) == (
        "extract",
        "io",
        [],
    )
    assert load_body["dependencies"] == ["extract"]
    assert (load_body["max_retries"], load_body["ordering_key"]) == (5, "warehouse")
    assert "schedule" not in body or body["schedule"]["type"] != "cron"


def test_a_recurring_body_carries_its_cron_schedule() -> None:
    flow = Workflow()
    flow.task("only", "noop")
    body = flow.body(cron="@daily", timezone="Asia/Tokyo", overlap_policy="skip")
    assert body["schedule"] == {
        "type": "cron",
        "cron_expression": "@daily",
        "timezone": "Asia/Tokyo",
        "overlap_policy": "skip",
    }


def test_mistakes_fail_while_building() -> None:
    flow = Workflow()
    flow.task("a", "noop")
    with pytest.raises(ValueError, match="two tasks"):
        flow.task("a", "noop")
    with pytest.raises(TypeError, match="cron"):
        flow.task("b", "noop", cron="@daily")
    with pytest.raises(TypeError, match="colour"):
        flow.task("c", "noop", colour="blue")  # type: ignore[call-arg]
    with pytest.raises(TypeError, match="need cron"):
        flow.body(timezone="UTC")
    with pytest.raises(TypeError, match="unknown schedule options"):
        flow.body(cron="@daily", colour="blue")
