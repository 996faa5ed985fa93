"""Reading the CLI's plain parameters without pydantic.

Typer (0.2x) coerces every parameter's value through a pydantic `TypeAdapter`, built on
first use: importing pydantic and building the adapters cost a command 100 to 200 ms on
a 2-core machine, more than the rest of `tickwheel ls` together. The CLI's parameters
are plain (text, whole and decimal numbers with bounds, an enum, lists of those), so
they are read here instead; any other parameter (a path, a tuple) is left to Typer.
On a Typer without this layer (before 0.2x) this changes nothing.
"""

from __future__ import annotations

import types
from collections.abc import Callable
from enum import Enum
from typing import Any, Union, get_args, get_origin

import typer

Convert = Callable[[Any], Any]


class PlainValue:
    """A parameter's value read by `convert`, one item at a time for a repeated one
    (the part of Typer's `RuntimeParam` that its parameters call)."""

    def __init__(self, convert: Convert, info: Any) -> None:
        self._convert = convert
        self._min = getattr(info, "min", None)
        self._max = getattr(info, "max", None)
        self._clamp = bool(getattr(info, "clamp", False))

    def coerce(self, value: Any, param: Any, ctx: Any) -> Any:
        repeated = param.multiple or param.nargs == -1
        if value is None:
            return () if repeated else None
        if repeated:
            return [self._one(item, param, ctx) for item in value]
        return self._one(value, param, ctx)

    def _one(self, value: Any, param: Any, ctx: Any) -> Any:
        try:
            read = self._convert(value)
        except (TypeError, ValueError, KeyError):
            kind = getattr(self._convert, "__name__", "value")
            raise typer.BadParameter(f"{value!r} is not a valid {kind}", ctx, param) from None
        if isinstance(read, int | float) and not isinstance(read, bool):
            read = self._bounded(read, param, ctx)
        return read

    def _bounded(self, number: float, param: Any, ctx: Any) -> float:
        low, high = self._min, self._max
        if self._clamp:
            number = number if low is None else max(low, number)
            return number if high is None else min(high, number)
        if (low is not None and number < low) or (high is not None and number > high):
            span = f"{'' if low is None else f'{low}<='}x{'' if high is None else f'<={high}'}"
            raise typer.BadParameter(f"{number} is not in the range {span}", ctx, param)
        return number


def _converter(annotation: Any, case_sensitive: bool) -> Convert | None:
    """How to read one value of `annotation`, or None when Typer should."""
    origin = get_origin(annotation)
    if origin in (Union, types.UnionType):
        kinds = [a for a in get_args(annotation) if a is not type(None)]
        return _converter(kinds[0], case_sensitive) if len(kinds) == 1 else None
    if origin is list:
        (item,) = get_args(annotation)
        return _converter(item, case_sensitive)
    if annotation in (str, float):
        return annotation  # type: ignore[no-any-return]
    if annotation is int:
        return _integer
    if annotation is bool:
        return _flag
    if isinstance(annotation, type) and issubclass(annotation, Enum):
        return _member(annotation, case_sensitive)
    return None


def _integer(value: Any) -> int:
    if isinstance(value, float) and not value.is_integer():
        raise ValueError(value)
    return int(value)


_integer.__name__ = "integer"
FLAG_WORDS = {
    "1": True,
    "true": True,
    "yes": True,
    "on": True,
    "0": False,
    "false": False,
    "no": False,
    "off": False,
    "": False,
}


def _flag(value: Any) -> bool:
    """A flag's value: a bool, or a word of its variable (TICKWHEEL_INSECURE=1)."""
    if isinstance(value, bool):
        return value
    return FLAG_WORDS[str(value).strip().lower()]


_flag.__name__ = "flag (1, true, yes, on; 0, false, no, off)"


def _member(kind: type[Enum], case_sensitive: bool) -> Convert:
    def member(value: Any) -> Enum:
        if isinstance(value, kind):
            return value
        for choice in kind:
            if choice.value == value or (
                not case_sensitive and str(choice.value).lower() == str(value).lower()
            ):
                return choice
        raise ValueError(value)

    member.__name__ = f"choice ({', '.join(str(c.value) for c in kind)})"
    return member


def plain(command: Any, help_names: list[str]) -> Any:
    """`command` (and its subcommands) reading its plain parameters here, its help flag
    (`help_names`, made now as Click would on first use) included."""
    found = list(getattr(command, "params", ()))
    if hasattr(command, "get_help_option"):
        found.append(command.get_help_option(types.SimpleNamespace(help_option_names=help_names)))
    for param in found:
        described = getattr(param, "type_descriptor", None)
        if described is None or not hasattr(param, "_runtime_param"):
            continue  # a Typer without pydantic coercion
        info = described.parameter_info
        convert = _converter(described.annotation, getattr(info, "case_sensitive", True))
        if convert is not None:
            param._runtime_param = PlainValue(convert, info)
    for sub in getattr(command, "commands", {}).values():
        plain(sub, help_names)
    return command
