"""What the API's bodies share: strict numbers, names, and the shape of an error.

Every limit a client controls is stated in the schemas, so bad input is a 4xx naming its
field and never reaches the engine. One module per router holds its bodies beside this.
"""

from __future__ import annotations

import re
from typing import Annotated, Any

from pydantic import AwareDatetime, BaseModel, BeforeValidator, ConfigDict, Field
from pydantic import Strict as StrictValues

# Numbers and flags are strict: JSON `true` is not 1, and "5" is not 5.
StrictInt = Annotated[int, StrictValues()]
StrictFloat = Annotated[float, StrictValues()]  # an integer is still a number
StrictBool = Annotated[bool, StrictValues()]


def _not_a_number(value: Any) -> Any:
    """A time in a query is ISO 8601: pydantic would also read a number as a Unix time."""
    if isinstance(value, int | float) or (
        isinstance(value, str) and re.fullmatch(r"\s*[+-]?[\d.]+(e[+-]?\d+)?\s*", value, re.I)
    ):
        raise ValueError("an ISO 8601 date and time with a time zone, not a number")
    return value


# A time given in a query string, such as `created_after`.
IsoDatetime = Annotated[AwareDatetime, BeforeValidator(_not_a_number)]


MAX_BATCH_TASKS = 10_000
NAME_PATTERN = r"^[A-Za-z0-9_.:\-]+$"


class Strict(BaseModel):
    model_config = ConfigDict(extra="forbid")


def refuse(reason: str | None) -> None:
    """A validator's refusal of a name the engine keeps for itself."""
    if reason is not None:
        raise ValueError(reason)


class ProblemOut(BaseModel):
    field: str
    message: str


class ErrorOut(BaseModel):
    error: str = Field(
        description="A stable code: invalid_request, not_found, conflict, "
        "idempotency_conflict, stale_fence, overloaded, unauthorized, forbidden, "
        "unknown_route, method_not_allowed, internal"
    )
    message: str
    field: str | None = Field(None, description="The input at fault, e.g. schedule.due_time")
    problems: list[ProblemOut] | None = Field(
        None, description="Every invalid input (of a batch, by index: tasks.3.payload)"
    )
    task_id: str | None = Field(
        None, description="For idempotency_conflict: the task first made for the key"
    )
