"""What `/openapi.json` says beyond what FastAPI infers: the app's error model as a named
schema (`Error`) and, per router, the error statuses its routes can answer; the configured
compliance levels as the enum of every `compliance_level` parameter (read from the running
configuration each time, so a reload shows)."""

from __future__ import annotations

from typing import Any

from fastapi import FastAPI
from fastapi.openapi.utils import get_openapi
from pydantic import BaseModel, Field, TypeAdapter

from ...chat.events import ServerEvent

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
    from ..v1.response import ErrorBody

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


def _describe_events(schema: dict[str, Any]) -> None:
    """`/api/chat`'s stream: each event's `data` is one of the turn's event models (named by its
    `event:` line, the model's `type`), added to the schemas and listed under `x-event-data`."""
    stream = schema["paths"].get("/api/chat", {}).get("post", {}).get("responses", {}).get("200", {})
    media = stream.get("content", {}).get("text/event-stream")
    if media is None:
        return
    events = TypeAdapter(ServerEvent).json_schema(ref_template="#/components/schemas/{model}")
    named = schema.setdefault("components", {}).setdefault("schemas", {})
    for name, model in events.get("$defs", {}).items():
        named.setdefault(name, model)
    media["schema"] = {"type": "string", "description": "server-sent events: `event: <type>` and `data: <JSON>`"}
    media["x-event-data"] = {"oneOf": events.get("anyOf", []), "discriminator": {"propertyName": "type"}}
    names = ", ".join(f"`{ref['$ref'].rsplit('/', 1)[1]}`" for ref in events.get("anyOf", []))
    stream["description"] = f"{stream.get('description', '')}; each `data` is one of: {names}"


def install_openapi(app: FastAPI) -> None:
    """`app.openapi()` made afresh for the levels of the configuration now running."""
    made: dict[tuple[str, ...], dict[str, Any]] = {}

    def openapi() -> dict[str, Any]:
        levels = list(app.state.services.config.compliance.names)
        key = tuple(levels)
        if key not in made:
            schema = get_openapi(title=app.title, version=app.version, routes=app.routes)
            _name_levels(schema, levels)
            _describe_events(schema)
            made.clear()
            made[key] = schema
        return made[key]

    app.openapi = openapi  # type: ignore[method-assign]
