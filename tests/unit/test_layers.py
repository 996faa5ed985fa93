"""Imports flow one way: the composition root above the API, the worker and the engine;
the client and the wire shapes below the server's parts.

Read from the source (type-only imports included), so a cycle cannot hide behind a
lazy import.
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

PACKAGE = Path(__file__).parents[2] / "tickwheel"

# Who may not import whom: a module under the first may import none under the rest.
SERVER = ("tickwheel.node", "tickwheel.api", "tickwheel.engine", "tickwheel.worker")
FORBIDDEN = {
    "tickwheel.engine": (
        "tickwheel.node",
        "tickwheel.api",
        "tickwheel.worker",
        "tickwheel.cli",
        "tickwheel.client",
    ),
    "tickwheel.worker": (
        "tickwheel.node",
        "tickwheel.api",
        "tickwheel.engine",
        "tickwheel.cli",
        "tickwheel.client",
    ),
    "tickwheel.api": ("tickwheel.node", "tickwheel.worker", "tickwheel.cli", "tickwheel.client"),
    "tickwheel.storage": (*SERVER, "tickwheel.cli", "tickwheel.client"),
    "tickwheel.queue": (*SERVER, "tickwheel.cli", "tickwheel.client", "tickwheel.storage"),
    "tickwheel.metrics": (*SERVER, "tickwheel.cli", "tickwheel.client", "tickwheel.storage"),
    "tickwheel.core": (*SERVER, "tickwheel.cli", "tickwheel.client", "tickwheel.storage"),
    "tickwheel.client": (
        *SERVER,
        "tickwheel.storage",
        "tickwheel.queue",
        "tickwheel.wire.requests",
    ),
    "tickwheel.workflow": ("tickwheel.client", *SERVER),
    "tickwheel.wire": (*SERVER, "tickwheel.client", "tickwheel.storage", "tickwheel.queue"),
}
# The old address of `Node`, for the benchmarks' harnesses until they leave the package.
SHIMS = {"tickwheel.engine.node"}


def modules() -> dict[str, Path]:
    found = {}
    for path in PACKAGE.rglob("*.py"):
        parts = path.relative_to(PACKAGE.parent).with_suffix("").parts
        name = ".".join(parts[:-1] if parts[-1] == "__init__" else parts)
        if not name.startswith("tickwheel.bench"):
            found[name] = path
    return found


def imported_by(path: Path) -> set[str]:
    names = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Import):
            names.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            names.add(node.module)
            names.update(f"{node.module}.{alias.name}" for alias in node.names)
    return names


def _under(name: str, package: str) -> bool:
    return name == package or name.startswith(f"{package}.")


@pytest.mark.parametrize("layer", sorted(FORBIDDEN))
def test_imports_flow_one_way(layer: str) -> None:
    wrong = {
        f"{name} imports {target}"
        for name, path in modules().items()
        if _under(name, layer) and name not in SHIMS
        for target in imported_by(path)
        if any(_under(target, banned) for banned in FORBIDDEN[layer])
    }
    assert not wrong


def test_only_the_entry_points_import_the_composition_root() -> None:
    importers = {
        name
        for name, path in modules().items()
        if name not in SHIMS and any(_under(t, "tickwheel.node") for t in imported_by(path))
    }
    assert importers <= {
        "tickwheel",
        "tickwheel.cli.up",
        "tickwheel.cli.serving",
        "tickwheel.cli.cluster",
    }
