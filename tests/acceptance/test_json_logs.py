"""`TICKWHEEL_LOG_FORMAT=json`: the real CLI logs one JSON object per line."""

from __future__ import annotations

import json

from harness import Tickwheel


def test_tickwheel_up_logs_json_lines_with_the_node_id(tickwheel_factory: type) -> None:
    tw: Tickwheel = tickwheel_factory.start(
        extra_env={"TICKWHEEL_LOG_FORMAT": "json", "TICKWHEEL_LOG_LEVEL": "info"}
    )
    tw.stop()  # uvicorn ends by re-raising SIGTERM: the status says nothing here

    lines = [line for line in tw.log.read_text().splitlines() if line.strip()]
    logged = [json.loads(line) for line in lines if not line.startswith("Tickwheel listening")]
    assert len(logged) == len(lines) - 1  # every line but the banner on stdout is JSON
    started = [e for e in logged if e["logger"] == "tickwheel.node"]
    assert started and "started" in started[0]["message"]
    assert started[0]["node_id"] and started[0]["level"] == "INFO"
    assert any(e["logger"].startswith("uvicorn") for e in logged)  # the server's too
