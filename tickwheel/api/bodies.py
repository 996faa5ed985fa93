"""Bodies of the hot routes, read in one pass from bytes.

FastAPI decodes a JSON body into Python objects and then validates those; for a batch
of 10,000 tasks that is most of a submission's cost. `read` validates the bytes in one
pass (pydantic-core's JSON mode) and reports problems exactly as FastAPI would, and
`documented` keeps the body in the OpenAPI document, where `install` puts the schemas.
"""

from __future__ import annotations

from typing import Any, TypeVar

from fastapi import FastAPI, Request
from fastapi.exceptions import RequestValidationError
from fastapi.openapi.utils import get_openapi
from pydantic import BaseModel, ValidationError
from pydantic.json_schema import models_json_schema

M = TypeVar("M", bound=BaseModel)
REF = "#/components/schemas/{model}"


def documented(model: type[BaseModel]) -> dict[str, Any]:
    """`openapi_extra` of a route whose body `read` reads as `model` (give the model to
    `install` too)."""
    schema = {"$ref": REF.format(model=model.__name__)}
    return {"requestBody": {"required": True, "content": {"application/json": {"schema": schema}}}}


async def read(request: Request, model: type[M]) -> M:
    """The body as `model`; a body that is not one is a 422 naming the field at fault."""
    try:
        return model.model_validate_json(await request.body())
    except ValidationError as error:
        problems = error.errors(include_url=False, include_context=False)
        raise RequestValidationError(
            [{**p, "loc": ("body", *p["loc"])} for p in problems]
        ) from None


def install(app: FastAPI, models: list[type[BaseModel]]) -> None:
    """Put the `models` of the documented bodies among the document's schemas."""

    def openapi() -> dict[str, Any]:
        if app.openapi_schema is None:
            document = get_openapi(
                title=app.title, version=app.version, routes=app.routes, description=app.description
            )
            _, found = models_json_schema([(m, "validation") for m in models], ref_template=REF)
            schemas = document.setdefault("components", {}).setdefault("schemas", {})
            for name, schema in found.get("$defs", {}).items():
                schemas.setdefault(name, schema)
            app.openapi_schema = document
        return app.openapi_schema

    app.openapi = openapi  # type: ignore[method-assign]
