"""Progress bars for long work, on stderr so that stdout stays the figures."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import contextmanager

from rich.console import Console
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

console = Console(stderr=True)


@contextmanager
def steps(description: str, total: int) -> Iterator[Callable[[int], None]]:
    """A bar of `total` steps; yields `set_done(n)`, which moves it to n steps done."""
    with Progress(
        TextColumn("{task.description}"),
        BarColumn(),
        MofNCompleteColumn(),
        TimeElapsedColumn(),
        console=console,
        transient=True,
    ) as bar:
        task = bar.add_task(description, total=total)
        yield lambda done: bar.update(task, completed=done)


def say(message: str) -> None:
    console.print(message, style="dim")
