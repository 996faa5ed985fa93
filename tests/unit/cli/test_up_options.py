"""`tickwheel up`'s options that the CLI library cannot check by itself."""

from __future__ import annotations

import pytest
import typer

from tickwheel.cli.up import _days


def test_retention_days_are_a_number_or_nothing(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("TICKWHEEL_RETENTION_DAYS", raising=False)
    assert _days(None) == 30.0  # the default
    assert _days("7.5") == 7.5
    assert _days("0") == 0.0
    assert _days("") is None  # keep every task
    for wrong in ("-1", "soon", "nan", "inf"):
        with pytest.raises(typer.BadParameter):
            _days(wrong)


def test_an_empty_variable_keeps_every_task(monkeypatch: pytest.MonkeyPatch) -> None:
    # Click passes an empty variable on as no value at all.
    monkeypatch.setenv("TICKWHEEL_RETENTION_DAYS", "")
    assert _days(None) is None
    monkeypatch.setenv("TICKWHEEL_RETENTION_DAYS", "12")
    assert _days(None) == 12.0
