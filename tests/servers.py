"""Servers of a test's own: a `redis-server` and a PostgreSQL cluster, each on a free port
in a temporary folder, for the tests that stop, restart or empty a server. The machine's
own servers are never touched.

Both are context managers: leaving the block (a failed test included) kills the server's
processes and removes its folder. PostgreSQL's `initdb` and `pg_ctl` refuse to run as
root, so as root they run as the `postgres` user, in a folder that user owns.
"""

from __future__ import annotations

import contextlib
import glob
import os
import pwd
import shutil
import signal
import subprocess
import tempfile
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from types import TracebackType
from typing import Self

import redis

from bench.targets import free_port


class ServerMissing(RuntimeError):
    """The programs to run a private server are not installed."""


def wait_until(ready: Callable[[], bool], what: str, timeout: float = 30.0) -> None:
    """Polls `ready` until it holds, or raises."""
    deadline = time.monotonic() + timeout
    while not ready():
        if time.monotonic() > deadline:
            raise RuntimeError(f"{what} did not come up in {timeout:.0f} s")
        time.sleep(0.05)


class PrivateServer:
    """What both servers share: a temporary folder, a fixed port across restarts, and
    cleanup on leaving the `with` block whatever happened in it."""

    name = "server"

    def __init__(self) -> None:
        self.folder = Path(tempfile.mkdtemp(prefix=f"tickwheel-{self.name}-"))
        self.port = free_port()
        self.running = False

    def start(self) -> None:
        raise NotImplementedError

    def stop(self) -> None:
        raise NotImplementedError

    def kill(self) -> None:
        """Ends the server's processes at once, without shutdown code."""
        raise NotImplementedError

    def __enter__(self) -> Self:
        try:
            self.start()
        except BaseException:
            self.close()
            raise
        return self

    def __exit__(
        self,
        kind: type[BaseException] | None,
        error: BaseException | None,
        traceback: TracebackType | None,
    ) -> None:
        self.close()

    def close(self) -> None:
        with contextlib.suppress(Exception):
            self.kill()
        shutil.rmtree(self.folder, ignore_errors=True)

    def log(self) -> str:
        """The end of the server's log, for failure messages."""
        path = self.folder / f"{self.name}.log"
        return path.read_text(errors="replace")[-3000:] if path.exists() else ""


class PrivateRedis(PrivateServer):
    """`redis-server` without persistence (`--save '' --appendonly no`)."""

    name = "redis"

    def __init__(self) -> None:
        if shutil.which("redis-server") is None:
            raise ServerMissing("redis-server is not installed")
        super().__init__()
        self.process: subprocess.Popen[bytes] | None = None

    @property
    def url(self) -> str:
        return f"redis://127.0.0.1:{self.port}/0"

    def start(self) -> None:
        command = ["redis-server", "--bind", "127.0.0.1", "--port", str(self.port)]
        command += ["--save", "", "--appendonly", "no", "--dir", str(self.folder)]
        command += ["--logfile", str(self.folder / "redis.log")]
        self.process = subprocess.Popen(command, stdout=subprocess.DEVNULL)
        wait_until(self._answers, f"redis-server on port {self.port}: {self.log()}")
        self.running = True

    def _answers(self) -> bool:
        assert self.process is not None
        if self.process.poll() is not None:
            raise RuntimeError(f"redis-server exited: {self.log()}")
        try:
            with redis.Redis(port=self.port, socket_timeout=1) as client:
                return bool(client.ping())
        except redis.RedisError:
            return False

    def stop(self) -> None:
        """SIGTERM: without persistence, its data is gone."""
        if self.process is not None and self.process.poll() is None:
            self.process.terminate()
            try:
                self.process.wait(10)
            except subprocess.TimeoutExpired:
                self.kill()
        self.running = False

    def kill(self) -> None:
        if self.process is not None and self.process.poll() is None:
            self.process.kill()
            self.process.wait(10)
        self.running = False

    def restart(self, *, empty: bool = True) -> None:
        """Stops and starts it again on the same port: with no data when `empty`, else
        with what it held (saved to its folder first)."""
        dump = self.folder / "dump.rdb"
        if not empty:
            with redis.Redis(port=self.port) as client:
                client.save()
        self.stop()
        if empty:
            dump.unlink(missing_ok=True)
        self.start()


def postgres_bin() -> Path:
    """The folder of PostgreSQL's server programs (the newest installed)."""
    found = shutil.which("pg_ctl")
    if found:
        return Path(found).parent
    versions = sorted(glob.glob("/usr/lib/postgresql/*/bin/pg_ctl"), key=_version)
    if not versions:
        raise ServerMissing("PostgreSQL's server programs (initdb, pg_ctl) are not installed")
    return Path(versions[-1]).parent


def _version(path: str) -> float:
    return float(Path(path).parent.parent.name)


class PrivatePostgres(PrivateServer):
    """A cluster made with `initdb` (trust authentication) and run with `pg_ctl`, tuned to
    start fast and lose its data on a crash (fsync off): a test's throwaway."""

    name = "postgres"
    OPTIONS = (
        "-c listen_addresses=127.0.0.1 -c fsync=off -c synchronous_commit=off"
        " -c full_page_writes=off -c max_connections=300 -c shared_buffers=64MB"
    )

    def __init__(self) -> None:
        self.bin = postgres_bin()
        super().__init__()
        self.data = self.folder / "data"
        self._as_owner: list[str] = []
        if os.geteuid() == 0:  # initdb and pg_ctl refuse root
            owner = pwd.getpwnam("postgres")
            os.chown(self.folder, owner.pw_uid, owner.pw_gid)
            self._as_owner = ["runuser", "-u", "postgres", "--"]

    @property
    def url(self) -> str:
        return f"postgresql://postgres@127.0.0.1:{self.port}/postgres"

    def _run(self, program: str, *args: str) -> None:
        done = subprocess.run(
            [*self._as_owner, str(self.bin / program), *args],
            cwd=self.folder,
            capture_output=True,
            text=True,
        )
        if done.returncode != 0:
            raise RuntimeError(f"{program} failed: {done.stdout[-2000:]}{done.stderr[-2000:]}")

    def start(self) -> None:
        """Makes the cluster (`initdb`) the first time, then starts it."""
        if not (self.data / "PG_VERSION").exists():
            trust = ("-U", "postgres", "-A", "trust", "-E", "UTF8", "--locale=C", "--no-sync")
            self._run("initdb", "-D", str(self.data), *trust)
        options = f"-p {self.port} -k {self.folder} {self.OPTIONS}"
        log = str(self.folder / "postgres.log")
        self._run("pg_ctl", "start", "-wt60", "-D", str(self.data), "-l", log, "-o", options)
        self.running = True

    def stop(self) -> None:
        """A fast shutdown, as a service manager's restart does: sessions are ended."""
        if self.running:
            self._run("pg_ctl", "stop", "-w", "-m", "fast", "-D", str(self.data))
        self.running = False

    def restart(self) -> None:
        self.stop()
        self.start()

    def kill(self) -> None:
        pid_file = self.data / "postmaster.pid"
        if pid_file.exists():
            pid = int(pid_file.read_text().split()[0])
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGQUIT)  # an immediate shutdown: children go too
            deadline = time.monotonic() + 10
            while _alive(pid) and time.monotonic() < deadline:
                time.sleep(0.05)
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGKILL)
        self.running = False


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    return True


@contextlib.contextmanager
def small_disk(folder: Path, size_mb: int = 30) -> Iterator[Path]:
    """A tmpfs of `size_mb` mounted on `folder` (made here), unmounted on leaving."""
    folder.mkdir()
    if os.geteuid() != 0 or not shutil.which("mount"):
        raise ServerMissing("mounting a small tmpfs needs root")
    mounted = subprocess.run(
        ["mount", "-t", "tmpfs", "-o", f"size={size_mb}m", "tmpfs", str(folder)],
        capture_output=True,
    )
    if mounted.returncode:
        raise ServerMissing(f"cannot mount a tmpfs: {mounted.stderr!r}")
    try:
        yield folder
    finally:
        subprocess.run(["umount", "-l", str(folder)], capture_output=True)


def fill(folder: Path) -> Path:
    """Writes a file in `folder` until its disk is full; delete it to free the space."""
    filler = folder / "filler"
    with filler.open("wb") as out:
        chunk = b"\0" * (1 << 20)
        try:
            while True:
                out.write(chunk)
                out.flush()
        except OSError:
            pass
    return filler
