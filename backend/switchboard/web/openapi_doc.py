"""What `/openapi.json` says beyond what FastAPI infers: the app's error model as a named
schema (`Error`) and, per router, the error statuses its routes can answer; the configured
compliance levels as the enum of every `compliance_level` parameter (read from the running
configuration each time, so a reload shows)."""

from __future__ import annotations

from typing import Any

from fastapi import FastAPI
from fastapi.openapi.utils import get_openapi
from pydantic import BaseModel, Field

__all__ = ["ErrorModel", "app_errors", "install_openapi", "openai_errors"]

_SAYS = {
    400: "a malformed request (the message says which part)",
    401: "no signed-in user (proxy mode: no trusted identity; or a bad API token)",
    403: "the user may not do this (not an administrator, a compliance level, a bad file link)",
    404: "no such thing, or not the user's",
    409: "the id is taken, or the conversation is busy (an answer runs)",
    413: "the request body is larger than the limit",
    429: "a per-user limit is reached",
    503: "the conversation store or a server is not available",
}


class AppErrorDetail(BaseModel):
    code: str = Field(description="what kind of error (`bad_request`, `forbidden`, `not_found`, ...)")
    message: str = Field(description="what went wrong, in words")
    action: str | None = Field(description="what to do about it")
    request_id: str | None = Field(default=None, description="only on a 500: the id of its record in app.jsonl")


class ErrorModel(BaseModel):
    """Every error of the HTTP API (the OpenAI-compatible `/v1` routes answer OpenAI's own shape)."""

    error: AppErrorDetail


def app_errors(*statuses: int) -> dict[int | str, dict[str, Any]]:
    """A router's `responses=`: these statuses, each an `Error`."""
    return {status: {"model": ErrorModel, "description": _SAYS[status]} for status in statuses}


def openai_errors(*statuses: int) -> dict[int | str, dict[str, Any]]:
    from .openai_compat import ErrorBody

    return {status: {"model": ErrorBody, "description": _SAYS[status]} for status in statuses}


def _name_levels(schema: dict[str, Any], levels: list[str]) -> None:
    for item in schema.get("paths", {}).values():
        for operation in item.values():
            for param in operation.get("parameters", []):
                if param["name"].lower() in ("compliance_level", "x-switchboard-compliance-level"):
                    # The empty text is accepted as "no level", as leaving the parameter out.
                    param["schema"] = {
                        "type": "string",
                        "enum": [*levels, ""],
                        "title": param["schema"].get("title", ""),
                    }


def install_openapi(app: FastAPI) -> None:
    """`app.openapi()` made afresh for the levels of the configuration now running."""
    made: dict[tuple[str, ...], dict[str, Any]] = {}

    def openapi() -> dict[str, Any]:
        levels = list(app.state.services.config.compliance.names)
        key = tuple(levels)
        if key not in made:
            schema = get_openapi(title=app.title, version=app.version, routes=app.routes)
            _name_levels(schema, levels)
            made.clear()
            made[key] = schema
        return made[key]

    app.openapi = openapi  # type: ignore[method-assign]
