"""Work flowing through a cluster while a fault strikes: tasks submitted through the
Python client, as users submit them, at a steady rate from a thread."""

from __future__ import annotations

import threading
import time
from collections import Counter
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from typing import Any

from ledger import Ledger

from tickwheel import Client
from tickwheel.client.calls import Call
from tickwheel.client.retries import Retries
from tickwheel.errors import ServerError, TickwheelError


@dataclass(frozen=True)
class Witnessed(Retries):
    """The client's own retries, noting each answer met on the way (a 503 the client
    retried included), as "201", "503", "503 without Retry-After"..."""

    met: Counter[str] = field(default_factory=Counter)

    def after_answer(
        self, call: Call[Any], attempt: int, status: int, retry_after: str | None
    ) -> float | None:
        missing = " without Retry-After" if status == 503 and retry_after is None else ""
        self.met[f"{status}{missing}"] += 1
        return super().after_answer(call, attempt, status, retry_after)


def due_in(seconds: float) -> datetime:
    """A due time `seconds` from now, to the millisecond (as the store keeps it)."""
    moment = datetime.now(UTC) + timedelta(seconds=seconds)
    return moment.replace(microsecond=moment.microsecond // 1000 * 1000)


def submit(client: Client, ledger: Ledger, count: int, lead_seconds: float) -> None:
    """`count` tasks in one batch, due `lead_seconds` from now; what the server
    acknowledged goes into the ledger, what it refused into its statuses."""
    due = due_in(lead_seconds)
    made = ledger.bodies(count, due_time=due)
    try:
        answers = client.submit_many([body for _, body in made])
    except ServerError as error:
        ledger.statuses[error.status] += 1
        return
    except TickwheelError:  # no answer at all, after the client's retries
        ledger.statuses[0] += 1
        return
    ledger.statuses[201] += 1
    due_ms = round(due.timestamp() * 1000)
    for (index, _), answer in zip(made, answers, strict=True):
        ledger.task_of[index] = answer.task_id
        ledger.accepted[answer.task_id] = due_ms


class Stream:
    """`rate` tasks a second, in batches of `batch`, each due `lead_seconds` after its
    submission, until stopped."""

    def __init__(
        self, url: str, ledger: Ledger, *, rate: float, batch: int = 20, lead_seconds: float = 1.0
    ) -> None:
        self._client = Client(url, timeout_seconds=10, retries=Witnessed(met=ledger.met))
        self._ledger, self._batch, self._lead = ledger, batch, lead_seconds
        self._every = batch / rate
        self._stopping = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)

    def __enter__(self) -> Stream:
        self._thread.start()
        return self

    def __exit__(self, *_: object) -> None:
        self._stopping.set()
        self._thread.join(60)
        self._client.close()

    def _run(self) -> None:
        next_at = time.monotonic()
        while not self._stopping.is_set():
            submit(self._client, self._ledger, self._batch, self._lead)
            next_at += self._every
            self._stopping.wait(max(0.0, next_at - time.monotonic()))
