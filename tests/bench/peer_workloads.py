"""What every peer's test checks: both workloads, small, run every task exactly once and
report the figures users read. No timing is asserted: this machine is shared and noisy."""

from __future__ import annotations

from bench import peers

TASKS = 20
LEAD_SECONDS = 2.0


async def check_workloads(name: str) -> None:
    """Runs `e2e` and `burst` on the peer `name` and checks what they report."""
    for workload in ("e2e", "burst"):
        peer = peers.load(name)
        try:
            if workload == "e2e":
                result = await peers.base.e2e(peer, TASKS)
            else:
                result = await peers.base.burst(peer, TASKS, LEAD_SECONDS)
        finally:
            await peer.close()
        assert (result["system"], result["workload"]) == (peer.name, workload)
        assert result["version"] != "not installed"
        assert (result["tasks"], result["ran"], result["repeats"]) == (TASKS, TASKS, 0)
        if workload == "e2e":
            assert result["drained_per_s"] > 0
            assert result["submitted_per_s"] > 0
        else:
            assert result["never_ran"] == 0
            assert set(result["start_lateness_ms"]) == {"p50", "p99", "max"}
            assert result["first_start_ms"] <= result["start_lateness_ms"]["p50"]
            assert {"early", "lead_seconds", "submission_outlasted_lead"} <= set(result)
