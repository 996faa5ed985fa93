"""What every folder of the suite shares: servers of the tests' own, for tests that stop,
restart or empty one (each starts the first time a test asks for it), and the check
that the run left the machine's own Redis and PostgreSQL as it found them
(machine_check; a change fails the session)."""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path
from typing import TypeVar

import machine_check
import pytest
from servers import PrivatePostgres, PrivateRedis, PrivateServer, ServerMissing, small_disk
from services import POSTGRES_URL, REDIS_URL, missing

S = TypeVar("S", bound=PrivateServer)


def _started(kind: type[S]) -> Iterator[S]:
    try:
        server = kind()
    except ServerMissing as error:
        missing(str(error))
    with server:
        yield server


@pytest.fixture(scope="session")
def private_redis() -> Iterator[PrivateRedis]:
    """A `redis-server` of the session's own, on a free port, without persistence."""
    yield from _started(PrivateRedis)


@pytest.fixture(scope="session")
def private_postgres() -> Iterator[PrivatePostgres]:
    """A PostgreSQL cluster of the session's own, on a free port, in a temporary folder."""
    yield from _started(PrivatePostgres)


@pytest.fixture(name="small_disk")
def small_disk_fixture(tmp_path: Path) -> Iterator[Path]:
    """A 30 MB tmpfs of the test's own (the folder it is mounted on)."""
    try:
        with small_disk(tmp_path / "disk") as folder:
            yield folder
    except ServerMissing as error:
        missing(str(error))


# -- the machine's own servers, as the run found them -------------------------------

BEFORE = pytest.StashKey[machine_check.MachineState]()
CHANGED = pytest.StashKey[list[str]]()


def _checks_machine(config: pytest.Config) -> bool:
    return os.environ.get("TICKWHEEL_CHECK_MACHINE") != "0" and not config.option.collectonly


def pytest_sessionstart(session: pytest.Session) -> None:
    if _checks_machine(session.config):
        session.config.stash[BEFORE] = machine_check.read(REDIS_URL, POSTGRES_URL)


def pytest_sessionfinish(session: pytest.Session) -> None:
    before = session.config.stash.get(BEFORE, None)
    if before is None:
        return
    changed = machine_check.changes(before, machine_check.read(REDIS_URL, POSTGRES_URL))
    if changed:
        session.config.stash[CHANGED] = changed
        session.exitstatus = pytest.ExitCode.TESTS_FAILED


def pytest_terminal_summary(terminalreporter: pytest.TerminalReporter) -> None:
    changed = terminalreporter.config.stash.get(CHANGED, [])
    if changed:
        terminalreporter.section("the machine's Redis and PostgreSQL", red=True)
        terminalreporter.write_line(
            "The run changed servers it must leave alone (TICKWHEEL_CHECK_MACHINE=0"
            " skips this check):",
            red=True,
        )
        for line in changed:
            terminalreporter.write_line(f"  - {line}", red=True)
