"""Load config files: shipped defaults merged with site overrides.

mcp.json merges server by server (an override entry replaces the default of
the same name); llmconfig.yml merges model by model; groups.yml and
compliance-levels.json are replaced whole by an override file.  A broken
server entry is reported and never stops the others.
"""

from __future__ import annotations

import json
import os
import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml
from pydantic import BaseModel, ValidationError

from ..errors import ConfigError
from ..policy.config import HookSet, load_hooks
from .models import ComplianceLevels, GroupsConfig, LLMConfig, ModelConfig, ServerConfig

__all__ = ["SERVER_NAME", "AppConfig", "McpConfig", "load_app_config", "load_mcp_config", "server_entry"]

_VAR = re.compile(r"\$\{([A-Za-z_][A-Za-z0-9_]*)(?::-([^}]*))?\}")
_EXPANDED_FIELDS = ("command", "args", "cwd", "env", "url", "headers", "auth")


@dataclass
class McpConfig:
    servers: dict[str, ServerConfig] = field(default_factory=dict)
    errors: dict[str, ConfigError] = field(default_factory=dict)  # server name -> why it was refused
    file_errors: list[ConfigError] = field(default_factory=list)  # whole-file problems
    required_errors: set[str] = field(default_factory=set)  # refused entries that said "required": true
    sources: dict[str, str] = field(default_factory=dict)  # server -> "admin" (the console's); else "config"
    trust: dict[str, str] = field(default_factory=dict)  # server -> the console's "trust" for it


@dataclass
class AppConfig:
    mcp: McpConfig
    llm: LLMConfig
    groups: GroupsConfig
    compliance: ComplianceLevels
    system_prompt: str
    errors: list[ConfigError] = field(default_factory=list)  # entries refused (a model, a field)
    hooks: HookSet = field(default_factory=HookSet)  # hooks.json; its errors are file_errors too
    file_errors: list[ConfigError] = field(default_factory=list)  # files ignored whole (syntax, shape)

    def broken_files(self) -> list[ConfigError]:
        """Files that could not be used at all: the site runs without them, so this is never quiet."""
        return [*self.mcp.file_errors, *self.file_errors]

    def all_errors(self) -> list[ConfigError]:
        return [*self.broken_files(), *self.errors, *self.mcp.errors.values()]


def _read(path: Path) -> Any:
    try:
        text = path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise ConfigError(f"cannot be read: {exc}", file=str(path)) from None
    if path.suffix == ".json":
        try:
            return json.loads(text)
        except json.JSONDecodeError as exc:
            raise ConfigError(
                f"not valid JSON (line {exc.lineno}, column {exc.colno}): {exc.msg}", file=str(path)
            ) from None
    try:
        return yaml.safe_load(text)
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        where = f" (line {mark.line + 1}, column {mark.column + 1})" if mark is not None else ""
        problem = getattr(exc, "problem", None) or type(exc).__name__
        raise ConfigError(f"not valid YAML{where}: {problem}", file=str(path)) from None


Problems = list[tuple[str, str]]  # (field, what is wrong), for one entry


def _expand(value: Any, environ: Mapping[str, str], problems: Problems, field_name: str) -> Any:
    if isinstance(value, str):

        def replace(match: re.Match[str]) -> str:
            var, default = match.group(1), match.group(2)
            if var in environ:
                return environ[var]
            if default is not None:
                return default
            problems.append((field_name, f"environment variable ${{{var}}} is not set"))
            return match.group(0)

        return _VAR.sub(replace, value)
    if isinstance(value, list):
        return [_expand(v, environ, problems, f"{field_name}[{i}]") for i, v in enumerate(value)]
    if isinstance(value, dict):
        return {k: _expand(v, environ, problems, f"{field_name}.{k}") for k, v in value.items()}
    return value


def _problems(exc: ValidationError) -> Problems:
    return [
        (
            ".".join(str(part) for part in error["loc"]),
            "unknown field" if error["type"] == "extra_forbidden" else error["msg"].removeprefix("Value error, "),
        )
        for error in exc.errors()
    ]


def _entry_error(problems: Problems, *, file: str, server: str = "", model: str = "", prefix: str = "") -> ConfigError:
    """Every problem of the entry, not only the first, so that one round of fixes is enough.
    `prefix`: where the entry sits, for an entry without a name (`models[2]`)."""
    located = [(f"{prefix}.{loc}" if prefix and loc else prefix or loc, message) for loc, message in problems]
    if len(located) == 1:
        loc, message = located[0]
        return ConfigError(message, file=file, server=server, model=model, field=loc)
    listed = "; ".join(f"field '{loc}': {message}" if loc else message for loc, message in located)
    return ConfigError(f"{len(located)} problems: {listed}", file=file, server=server, model=model)


def _validation_error(
    exc: ValidationError, *, file: str, server: str = "", model: str = "", prefix: str = ""
) -> ConfigError:
    return _entry_error(_problems(exc), file=file, server=server, model=model, prefix=prefix)


def _server_entries(path: Path, data: Any) -> dict[str, Any]:
    if not isinstance(data, dict):
        raise ConfigError("must be a JSON object with a 'servers' key", file=str(path))
    unknown = set(data) - {"servers", "mcpServers", "$schema"}
    if unknown:
        raise ConfigError(f"unknown top-level key(s) {sorted(unknown)}; use 'servers'", file=str(path))
    entries: dict[str, Any] = {}
    for key in ("servers", "mcpServers"):
        block = data.get(key) or {}
        if not isinstance(block, dict):
            raise ConfigError("must map server names to server entries", file=str(path), field=key)
        entries.update(block)
    return entries


SERVER_NAME = re.compile(r"[A-Za-z0-9_.-]{1,64}")


def server_entry(name: str, entry: Any, environ: Mapping[str, str], *, file: str) -> ServerConfig:
    """One mcp.json entry validated, `${VAR}`s expanded; raises ConfigError naming every field at
    fault. The console's servers pass through here too (`file`: where the entry comes from)."""
    if not SERVER_NAME.fullmatch(name):
        raise ConfigError(
            "server names may use letters, digits, '_', '.', '-' (at most 64)", file=file, server=name, field="name"
        )
    if not isinstance(entry, dict):
        raise ConfigError("a server entry must be an object", file=file, server=name)
    entry = dict(entry)
    problems: Problems = []
    if entry.get("enabled", True) is not False:
        for key in _EXPANDED_FIELDS:
            if key in entry:
                entry[key] = _expand(entry[key], environ, problems, key)
    try:
        server = ServerConfig.model_validate(entry)
    except ValidationError as exc:
        problems += _problems(exc)
    if problems:
        raise _entry_error(problems, file=file, server=name)
    return server


def load_mcp_config(defaults_dir: Path, overrides_dir: Path, environ: Mapping[str, str] | None = None) -> McpConfig:
    environ = os.environ if environ is None else environ
    result = McpConfig()
    raw: dict[str, tuple[Path, Any]] = {}
    for path, data in _safe_layers("mcp.json", defaults_dir, overrides_dir, result.file_errors):
        try:
            entries = _server_entries(path, data)
        except ConfigError as exc:
            result.file_errors.append(exc)
            continue
        for name, entry in entries.items():
            raw[name] = (path, entry)
    for name, (path, entry) in raw.items():
        try:
            result.servers[name] = server_entry(name, entry, environ, file=str(path))
        except ConfigError as exc:
            result.errors[name] = exc
            if isinstance(entry, dict) and entry.get("required") is True:
                result.required_errors.add(name)
    return result


def _safe_layers(
    name: str, defaults_dir: Path, overrides_dir: Path, errors: list[ConfigError]
) -> list[tuple[Path, Any]]:
    layers = []
    for folder in (defaults_dir, overrides_dir):
        path = folder / name
        if not path.is_file():
            continue
        try:
            layers.append((path, _read(path)))
        except ConfigError as exc:
            errors.append(exc)
    return layers


def _load_model(
    cls: type[BaseModel], name: str, defaults_dir: Path, overrides_dir: Path, file_errors: list[ConfigError]
) -> Any:
    layers = _safe_layers(name, defaults_dir, overrides_dir, file_errors)
    for path, data in reversed(layers):
        try:
            return cls.model_validate(data or {})
        except ValidationError as exc:
            file_errors.append(_validation_error(exc, file=str(path), server=""))
    return cls()


def _load_llm(
    defaults_dir: Path, overrides_dir: Path, errors: list[ConfigError], file_errors: list[ConfigError]
) -> LLMConfig:
    models: dict[str, ModelConfig] = {}
    default_model: str | None = None
    site_default = False
    threshold: int | None = None
    for path, data in _safe_layers("llmconfig.yml", defaults_dir, overrides_dir, file_errors):
        if not isinstance(data, dict):
            file_errors.append(ConfigError("must be a mapping with 'models'", file=str(path)))
            continue
        unknown = set(data) - {"default_model", "models", "gateway_threshold_tokens"}
        if unknown:
            errors.append(ConfigError(f"unknown key(s) {sorted(unknown)}", file=str(path)))
        if data.get("default_model"):
            default_model, site_default = data["default_model"], path.parent == overrides_dir
        if "gateway_threshold_tokens" in data:
            value = data["gateway_threshold_tokens"]
            if isinstance(value, int) and not isinstance(value, bool) and value >= 0:
                threshold = value
            else:
                errors.append(
                    ConfigError(
                        "gateway_threshold_tokens must be a whole number of tokens, 0 or more",
                        file=str(path),
                        field="gateway_threshold_tokens",
                    )
                )
        for i, entry in enumerate(data.get("models") or []):
            try:
                model = ModelConfig.model_validate(entry)
            except ValidationError as exc:
                name = entry.get("name") if isinstance(entry, dict) else None
                if isinstance(name, str) and name:
                    errors.append(_validation_error(exc, file=str(path), model=name))
                else:
                    errors.append(_validation_error(exc, file=str(path), prefix=f"models[{i}]"))
                continue
            models[model.name] = model
    if default_model and default_model not in models:
        errors.append(
            ConfigError(
                f"default_model '{default_model}' is not in models", file="llmconfig.yml", field="default_model"
            )
        )
        default_model = None
    extra = {"gateway_threshold_tokens": threshold} if threshold is not None else {}
    return LLMConfig(
        default_model=default_model, default_is_site_choice=site_default, models=list(models.values()), **extra
    )


def load_app_config(defaults_dir: Path, overrides_dir: Path, environ: Mapping[str, str] | None = None) -> AppConfig:
    errors: list[ConfigError] = []
    file_errors: list[ConfigError] = []
    prompt_path = overrides_dir / "system-prompt.md"
    if not prompt_path.is_file():
        prompt_path = defaults_dir / "system-prompt.md"
    system_prompt = prompt_path.read_text(encoding="utf-8") if prompt_path.is_file() else ""
    hooks = load_hooks(defaults_dir, overrides_dir)
    file_errors += hooks.errors  # a broken hooks.json is a broken file: every pre-execution point denies
    return AppConfig(
        mcp=load_mcp_config(defaults_dir, overrides_dir, environ),
        llm=_load_llm(defaults_dir, overrides_dir, errors, file_errors),
        groups=_load_model(GroupsConfig, "groups.yml", defaults_dir, overrides_dir, file_errors),
        compliance=_load_model(ComplianceLevels, "compliance-levels.json", defaults_dir, overrides_dir, file_errors),
        system_prompt=system_prompt,
        errors=errors,
        file_errors=file_errors,
        hooks=hooks,
    )
