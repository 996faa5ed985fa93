"""What the fault suite checks, counted outside Tickwheel: every call the tasks made to
a target server (the handlers' own record), set against what the submitters were told
and what the store recorded."""

from __future__ import annotations

import itertools
import sqlite3
import time
from collections import Counter
from collections.abc import Iterator
from contextlib import closing
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Protocol

from cluster import Cluster
from harness import wait_for
from runs import Runs

from tickwheel.client import task_body

FINAL = ("succeeded", "failed", "cancelled", "upstream_failed")
SERVER_ERRORS = frozenset(range(500, 600)) - {503}  # a store error is 503


@dataclass(frozen=True)
class Verdict:
    """One scenario's row of the suite's table."""

    scenario: str
    accepted: int  # tasks the submitters were told are stored
    lost: int  # accepted, yet not succeeded in the end
    ran_twice: int  # tasks that ran more than once, each time but one refused its result
    unfenced: int  # tasks with more than one result accepted: must never happen
    early: int  # tasks that started before they were due
    late_p99_seconds: float  # first start minus due, 99th percentile, fault included
    recovery_seconds: float  # the latest (last) start after max(due, the fault's end)
    unavailable: int  # answers 503 with Retry-After met (and retried) by the submitters
    server_errors: int  # any other 5xx met, and any 503 without Retry-After

    def row(self) -> list[str]:
        return [
            self.scenario,
            f"{self.accepted:,}",
            str(self.lost),
            str(self.ran_twice),
            str(self.unfenced),
            str(self.early),
            f"{self.late_p99_seconds:.2f}",
            f"{self.recovery_seconds:.1f}",
            str(self.unavailable),
            str(self.server_errors),
        ]


HEADER = [
    "scenario",
    "accepted",
    "lost",
    "ran twice (fenced)",
    "unfenced",
    "early",
    "late p99 s",
    "recovery s",
    "503 met",
    "other 5xx",
]


@dataclass
class Ledger:
    """Accepted tasks (id -> due, epoch ms), how their runs are counted, and the answers
    the submitters met."""

    runs: Runs
    accepted: dict[str, int] = field(default_factory=dict)
    task_of: dict[int, str] = field(default_factory=dict)  # the suite's index -> task id
    statuses: Counter[int] = field(default_factory=Counter)  # final: after retries
    met: Counter[str] = field(default_factory=Counter)  # every answer, retried ones too
    healed_at: float = 0.0  # epoch seconds: when the fault ended (set by the scenario)
    _next: Iterator[int] = field(default_factory=itertools.count)

    def bodies(self, count: int, **options: Any) -> list[tuple[int, dict[str, Any]]]:
        """`count` new tasks' (index, body), with the submit `options` given."""
        made = []
        for index in itertools.islice(self._next, count):
            task_type, payload = self.runs.body(index)
            made.append((index, task_body(task_type, payload, **options)))
        return made

    def starts(self) -> dict[str, list[float]]:
        """Task id -> the epoch seconds of each of its runs."""
        return self.runs.starts(self.task_of)

    def settle(self, record: Record, timeout: float) -> bool:
        """Waits until every accepted task has ended; False if some have not in time."""

        def ended() -> bool:
            try:
                statuses = record.statuses(list(self.accepted))
            except OSError:
                return False  # the store is still away
            return sum(1 for s in statuses.values() if s in FINAL) == len(self.accepted)

        return wait_for(ended, timeout=timeout, interval=0.5)

    def verdict(self, scenario: str, record: Record) -> Verdict:
        ids = list(self.accepted)
        status, results = record.statuses(ids), record.results(ids)
        starts = self.starts()
        early = sum(
            1 for t, due in self.accepted.items() if starts.get(t) and min(starts[t]) * 1000 < due
        )
        late = sorted(
            min(starts[t]) - due / 1000 for t, due in self.accepted.items() if starts.get(t)
        )
        latest = [  # a task run again after a lost lease counts by its last start
            max(starts[t]) - max(due / 1000, self.healed_at)
            for t, due in self.accepted.items()
            if starts.get(t)
        ]
        return Verdict(
            scenario=scenario,
            accepted=len(ids),
            lost=sum(1 for t in ids if status.get(t) != "succeeded" or not starts.get(t)),
            ran_twice=sum(1 for t in ids if len(starts.get(t, ())) > 1),
            unfenced=sum(1 for count in results.values() if count > 1),
            early=early,
            late_p99_seconds=late[int(len(late) * 0.99)] if late else 0.0,
            recovery_seconds=max([0.0, *latest]),
            unavailable=self.met["503"],
            server_errors=sum(n for answer, n in self.met.items() if answer[0] == "5")
            - self.met["503"],
        )


class Record(Protocol):
    """What the store holds of the tasks: read directly, not through Tickwheel's API."""

    def statuses(self, ids: list[str]) -> dict[str, str]: ...

    def results(self, ids: list[str]) -> dict[str, int]:
        """Task id -> how many of its attempts had a success accepted."""
        ...


class PostgresRecord:
    def __init__(self, cluster: Cluster) -> None:
        self._cluster = cluster

    def statuses(self, ids: list[str]) -> dict[str, str]:
        rows = self._cluster.query("SELECT task_id, status FROM tasks WHERE task_id = ANY($1)", ids)
        return dict(rows)

    def results(self, ids: list[str]) -> dict[str, int]:
        return dict(
            self._cluster.query(
                "SELECT t.task_id, count(*) FROM executions AS e"
                " JOIN tasks AS t ON t.seq = e.task_seq"
                " WHERE t.task_id = ANY($1) AND e.outcome = 'succeeded' GROUP BY t.task_id",
                ids,
            )
        )


class SqliteRecord:
    """An embedded server's database file, read beside the running server (WAL)."""

    def __init__(self, path: Path) -> None:
        self._path = path

    def _query(self, sql: str, ids: list[str]) -> list[tuple[str, Any]]:
        with closing(sqlite3.connect(self._path, timeout=10)) as db:
            db.execute("CREATE TEMP TABLE wanted (task_id TEXT PRIMARY KEY)")
            db.executemany("INSERT INTO wanted VALUES (?)", ((i,) for i in ids))
            return db.execute(sql).fetchall()

    def statuses(self, ids: list[str]) -> dict[str, str]:
        return dict(
            self._query("SELECT task_id, status FROM tasks JOIN wanted USING (task_id)", ids)
        )

    def results(self, ids: list[str]) -> dict[str, int]:
        return dict(
            self._query(
                "SELECT t.task_id, count(*) FROM executions AS e"
                " JOIN tasks AS t ON t.seq = e.task_seq JOIN wanted USING (task_id)"
                " WHERE e.outcome = 'succeeded' GROUP BY t.task_id",
                ids,
            )
        )


VERDICTS: list[Verdict] = []  # this session's rows, printed by conftest at the end


def record_row(verdict: Verdict) -> Verdict:
    VERDICTS.append(verdict)
    return verdict


def now_ms() -> int:
    return time.time_ns() // 1_000_000
