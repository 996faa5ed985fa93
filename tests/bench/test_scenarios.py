"""Every `tickwheel bench` scenario, at a tiny size, in both modes: it runs to the end
and its JSON line holds what users read. Nothing here asserts a time."""

from __future__ import annotations

import subprocess

import pytest
from bench_cli import TICKWHEEL, bench

MODES = ["embedded", "distributed"]


@pytest.mark.parametrize("mode", MODES)
def test_burst_runs_every_task_and_none_early(mode: str) -> None:
    result = bench("burst", "--mode", mode, "--tasks", "300", "--lead-seconds", "3")
    assert result["system"] == f"tickwheel ({mode})"
    assert (result["ran"], result["never_ran"], result["early"]) == (300, 0, 0)
    for key in ("trigger_lateness_ms", "start_lateness_ms"):
        assert set(result[key]) == {"p50", "p99", "max"}
    assert result["start_lateness_ms"]["p50"] <= result["start_lateness_ms"]["p99"]
    assert result["drain_seconds"] >= 0


@pytest.mark.parametrize("mode", MODES)
def test_e2e_completes_every_task(mode: str) -> None:
    result = bench("e2e", "--mode", mode, "--tasks", "300")
    assert (result["tasks"], result["ran"]) == (300, 300)
    assert result["tasks_per_s"] > 0


@pytest.mark.parametrize("mode", MODES)
def test_sustained_releases_every_task_once(mode: str) -> None:
    args = ("--rate", "200", "--seconds", "2", "--lead-seconds", "3")
    result = bench("sustained", "--mode", mode, *args)
    assert (result["tasks"], result["missing"]) == (400, 0)
    assert result["released"] == 400
    assert result["triggered_per_s"]["median"] > 0
    assert list(result["lateness_by_window"]) == ["0-10s"]


@pytest.mark.parametrize("mode", MODES)
def test_submit_measures_all_four_ways(mode: str) -> None:
    args = ("--single", "50", "--batches", "2", "--batch-size", "100")
    result = bench("submit", "--mode", mode, *args)
    for key in ("single_http_per_s", "batch_http_per_s", "sdk_single_per_s", "sdk_batch_per_s"):
        assert result[key] > 0, key


@pytest.mark.parametrize("mode", MODES)
def test_scale_measures_each_size(mode: str) -> None:
    result = bench("scale", "--mode", mode, "--stored", "100", "--stored", "1000")
    assert [size["stored"] for size in result["sizes"]] == [100, 1000]
    for size in result["sizes"]:
        assert size["early"] == 0
        assert size["load_pass_ms"] > 0


@pytest.mark.parametrize("mode", MODES)
def test_memory_counts_what_the_wheels_hold(mode: str) -> None:
    result = bench("memory", "--mode", mode, "--tasks", "2000")
    assert result["on_wheels"] == 2000
    assert "resident_bytes_per_task" in result


@pytest.mark.parametrize("mode", MODES)
def test_dag_runs_the_graph_in_order(mode: str) -> None:
    # the scenario itself fails if a task started before its last predecessor ended
    result = bench("dag", "--mode", mode, "--tasks", "200")
    assert result["tasks"] == 200
    assert result["depth"] > 1
    assert set(result["unblock_latency_ms"]) == {"p50", "p99", "max"}


def test_bad_input_is_named() -> None:
    done = subprocess.run(
        [TICKWHEEL, "bench", "compare", "--peer", "nope"], capture_output=True, text=True
    )
    assert done.returncode == 2
    assert "nope" in done.stderr
    done = subprocess.run(
        [TICKWHEEL, "bench", "burst", "--tasks", "0"], capture_output=True, text=True
    )
    assert done.returncode == 2
    assert "--tasks" in done.stderr


def test_ceilings_measure_every_store() -> None:
    result = bench("ceilings", "--rows", "2000", "--commands", "2000")
    for store in ("postgres", "sqlite"):
        assert result[store]["inserts_per_s"] > 0
        assert result[store]["updates_per_s"] > 0
    assert result["redis"]["pipelined_ops_per_s"] > 0
