"""Installing the checkout as a user would: a copy of its files (so a build leaves nothing
in the work tree), a fresh virtual environment, and this environment's pip installing
into it through the package index pip is configured with.

Used by the lean-install test (the base install) and the container test (the wheel the
Dockerfile builds, with the distributed extra).
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]

# Run by a fresh environment's interpreter, outside the checkout: the modules and
# distributions it can see, and the files its tickwheel installed.
PROBE = """
import importlib.metadata as metadata, importlib.util, json, sys
names = sys.argv[1:]
print(json.dumps({
    "modules": [n for n in names if importlib.util.find_spec(n) is not None],
    "distributions": sorted({(d.metadata["Name"] or "").lower() for d in metadata.distributions()}),
    "files": [str(f) for f in metadata.distribution("tickwheel").files or []],
}))
"""


def run(
    *command: str | Path, cwd: Path, env: dict[str, str] | None = None, timeout: float = 60
) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [str(part) for part in command],
        cwd=cwd,
        env=None if env is None else {**os.environ, **env},
        capture_output=True,
        text=True,
        timeout=timeout,
    )


def copy_checkout(dest: Path, keep: Callable[[str], bool] = lambda name: True) -> Path:
    """The checkout's files (tracked, and new ones not ignored) that `keep` admits, copied
    into `dest`."""
    listed = run("git", "ls-files", "-z", "--cached", "--others", "--exclude-standard", cwd=ROOT)
    assert listed.returncode == 0, listed.stderr
    for name in filter(None, listed.stdout.split("\0")):
        if keep(name) and (ROOT / name).is_file():  # deleted but not yet staged: still listed
            (dest / name).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(ROOT / name, dest / name)
    return dest


def fresh_venv(folder: Path, *requirements: str | Path, timeout: float = 240) -> Path:
    """A new virtual environment in `folder` holding `pip install *requirements`."""
    made = run(sys.executable, "-m", "venv", "--without-pip", folder, cwd=folder.parent)
    assert made.returncode == 0, made.stderr
    # this environment's pip installs into the new one (saves bootstrapping a pip there);
    # no byte-compiling of what it installs (Python does it on import)
    started = time.monotonic()
    installed = run(
        sys.executable, "-m", "pip", "--python", folder / "bin" / "python", "install",
        "--quiet", "--no-compile", *requirements, cwd=folder.parent, timeout=timeout,
    )  # fmt: skip
    assert installed.returncode == 0, installed.stderr[-3000:]
    print(f"pip install into a fresh venv: {time.monotonic() - started:.1f} s")
    return folder


def probe(venv: Path, names: list[str]) -> dict[str, list[str]]:
    """Which of `names` the environment imports, its distributions, tickwheel's files."""
    done = run(venv / "bin" / "python", "-c", PROBE, *names, cwd=venv.parent)
    assert done.returncode == 0, done.stderr
    found: dict[str, list[str]] = json.loads(done.stdout)
    return found
