"""hooks.json: the operator's hooks, from the defaults' file then the overrides' (their lists joined
in that order). Validated like mcp.json, with every error naming the file, the line and the field.
Unlike mcp.json, one bad entry spoils the whole set: a policy that cannot be read in full is
`broken`, and then no hook runs and every pre-execution point denies (runner.py)."""

from __future__ import annotations

import json
import shutil
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import Annotated, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator

from ..errors import ConfigError
from .cedar import CedarHandler
from .decisions import POINTS
from .handlers import CommandHandler, Handler, HttpHandler

__all__ = ["CedarSpec", "CommandSpec", "HookSet", "HookSpec", "HttpSpec", "MatchSpec", "load_hooks"]

FILE = "hooks.json"
_PYTHON = {"python", "python3"}


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class CommandSpec(_Strict):
    type: Literal["command"]
    command: list[str] = Field(min_length=1)
    timeout_s: float = Field(default=5.0, gt=0, le=300)


class HttpSpec(_Strict):
    type: Literal["http"]
    url: str
    timeout_s: float = Field(default=5.0, gt=0, le=300)

    @field_validator("url")
    @classmethod
    def _http_url(cls, value: str) -> str:
        if not value.startswith(("http://", "https://")):
            raise ValueError("must be an http:// or https:// address")
        return value


class CedarSpec(_Strict):
    type: Literal["cedar"]
    policies: str  # a .cedar file, relative to the config dir


class MatchSpec(_Strict):
    servers: list[str] | None = None
    tools: list[str] | None = None  # globs over qualified tool names
    groups: list[str] | None = None


class HookSpec(_Strict):
    id: str | None = None
    event: Literal[
        "session_start", "prompt_submit", "pre_model", "pre_tool", "permission_request", "post_tool", "turn_end"
    ]
    match: MatchSpec | None = None
    handler: Annotated[CommandSpec | HttpSpec | CedarSpec, Field(discriminator="type")]
    on_error: Literal["allow", "deny"] | None = None


@dataclass(frozen=True, slots=True)
class LoadedHook:
    id: str
    spec: HookSpec
    handler: Handler


@dataclass
class HookSet:
    hooks: list[LoadedHook] = field(default_factory=list)
    errors: list[ConfigError] = field(default_factory=list)  # any error: the set is broken

    @property
    def broken(self) -> bool:
        return bool(self.errors)


def _entry_lines(text: str) -> list[int]:
    """The line each entry of the top-level "hooks" list starts on (for valid JSON)."""
    decoder = json.JSONDecoder()
    start = text.find('"hooks"')
    at = text.find("[", start) + 1 if start >= 0 else 0
    lines: list[int] = []
    while 0 < at < len(text):
        while at < len(text) and text[at] in " \t\r\n,":
            at += 1
        if at >= len(text) or text[at] == "]":
            break
        lines.append(text.count("\n", 0, at) + 1)
        try:
            _, at = decoder.raw_decode(text, at)
        except json.JSONDecodeError:
            break
    return lines


def _resolve(argv: list[str], folder: Path) -> tuple[str, ...]:
    """`python` is the app's interpreter; a relative path is relative to the config dir."""
    first = sys.executable if argv[0] in _PYTHON else argv[0]
    if "/" in first and not Path(first).is_absolute():
        first = str(folder / first)
    if "/" not in first:
        found = shutil.which(first)
        if found is None:
            raise ValueError(f"command '{first}' was not found on PATH")
        first = found
    elif not Path(first).is_file():
        raise ValueError(f"command '{first}' does not exist")
    rest = list(argv[1:])
    if argv[0] in _PYTHON and rest and rest[0].endswith(".py"):
        script = Path(rest[0]) if Path(rest[0]).is_absolute() else folder / rest[0]
        if not script.is_file():
            raise ValueError(f"script '{rest[0]}' does not exist in {folder}")
        rest[0] = str(script)
    return (first, *rest)


def _handler(spec: HookSpec, folder: Path) -> Handler:
    handler = spec.handler
    if isinstance(handler, CommandSpec):
        return CommandHandler(_resolve(handler.command, folder), folder, handler.timeout_s)
    if isinstance(handler, HttpSpec):
        return HttpHandler(handler.url, handler.timeout_s)
    return CedarHandler(folder / handler.policies)


def _load_file(path: Path, start: int, errors: list[ConfigError]) -> list[LoadedHook]:
    file = str(path)
    try:
        text = path.read_text(encoding="utf-8")
        data = json.loads(text)
    except (OSError, UnicodeDecodeError) as exc:
        errors.append(ConfigError(f"cannot be read: {exc}", file=file))
        return []
    except json.JSONDecodeError as exc:
        errors.append(ConfigError(f"not valid JSON (line {exc.lineno}, column {exc.colno}): {exc.msg}", file=file))
        return []
    if not isinstance(data, dict) or not isinstance(data.get("hooks", []), list):
        errors.append(ConfigError('must be a JSON object with a "hooks" list', file=file))
        return []
    unknown = set(data) - {"hooks", "$schema"}
    if unknown:
        errors.append(ConfigError(f"unknown top-level key(s) {sorted(unknown)}; use 'hooks'", file=file))
        return []
    lines = _entry_lines(text)
    loaded: list[LoadedHook] = []
    for i, entry in enumerate(data.get("hooks", [])):
        line = f"line {lines[i]}: " if i < len(lines) else ""
        try:
            spec = HookSpec.model_validate(entry)
        except ValidationError as exc:
            for problem in exc.errors():
                loc = [str(p) for p in problem["loc"]]
                if len(loc) > 2 and loc[0] == "handler" and loc[1] in ("command", "http", "cedar"):
                    del loc[1]  # the handler's type, which pydantic puts in the path
                where = ".".join(loc)
                message = "unknown field" if problem["type"] == "extra_forbidden" else problem["msg"]
                if problem["type"] == "literal_error" and where == "event":
                    message = f"unknown event; one of {', '.join(POINTS)}"
                field_name = f"hooks[{i}].{where}" if where else f"hooks[{i}]"
                errors.append(ConfigError(f"{line}{message}", file=file, field=field_name))
            continue
        try:
            handler = _handler(spec, path.parent)
        except ValueError as exc:
            what = {"command": "command", "cedar": "policies"}.get(spec.handler.type, "url")
            errors.append(ConfigError(f"{line}{exc}", file=file, field=f"hooks[{i}].handler.{what}"))
            continue
        loaded.append(LoadedHook(spec.id or f"{spec.event}#{start + i}", spec, handler))
    return loaded


def load_hooks(defaults_dir: Path, overrides_dir: Path) -> HookSet:
    result = HookSet()
    for folder in (defaults_dir, overrides_dir):
        path = folder / FILE
        if path.is_file():
            result.hooks += _load_file(path, len(result.hooks), result.errors)
    ids = [hook.id for hook in result.hooks]
    for dup in sorted({i for i in ids if ids.count(i) > 1}):
        result.errors.append(ConfigError(f"two hooks have the id '{dup}'", file=FILE, field="id"))
    if result.errors:
        result.hooks = []
    return result
