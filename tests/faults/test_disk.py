"""The embedded store's disk fills up under load (`tickwheel up` with its SQLite file
on a small tmpfs of the test's own), then space returns."""

from __future__ import annotations

import time
from pathlib import Path

from harness import Target, Tickwheel
from ledger import Ledger, SqliteRecord
from runs import TargetRuns
from scenario import assert_nothing_wrong, run_against
from servers import fill


def test_a_full_disk_under_the_embedded_store(
    small_disk: Path, tmp_path: Path, target: Target, ledger: Ledger
) -> None:
    """Submissions meet 503 storage_full with Retry-After while the disk is full (the
    client retries them), nothing acknowledged is lost, and work resumes once space
    returns."""
    target.delays[TargetRuns.PATH] = 0.05
    server = Tickwheel(small_disk / "tickwheel.db")
    server.log = tmp_path / "tickwheel.log"  # not on the disk that fills
    server.start()

    def fault() -> None:
        filler = fill(small_disk)
        time.sleep(5)
        filler.unlink()

    try:
        verdict = run_against(
            "disk full under the embedded store for 5 s",
            server.url,
            ledger,
            fault,
            SqliteRecord(server.db),
            rate=200,
            batch=20,
            before_seconds=2,
            after_seconds=3,
            settle_seconds=60,
            logs=lambda: server.log.read_text()[-3000:],
        )
    finally:
        server.stop()
    assert_nothing_wrong(verdict, recovery_seconds=8)
