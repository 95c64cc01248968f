"""A registry's entries as typed values: the `server.json` format (schema 2025-12-11) inside the
MCP Registry API's `ServerResponse` (`{"server": ..., "_meta": ...}`).

Registry data is untrusted: fields are checked against the schema's own limits (name pattern and
length, description length, version without ranges), unknown fields are ignored (a newer schema
still reads), and an entry that does not fit is refused with a message that names the field, never
the value.  What an entry needs from the person installing it (URL variables, headers, secrets,
environment) is worked out once here, as structured fields for the page and the install plan.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from ..errors import BadRequest

__all__ = [
    "OFFICIAL_META",
    "TEMPLATE",
    "Argument",
    "BadRegistryData",
    "Input",
    "KeyValueInput",
    "Need",
    "Package",
    "RegistryEntry",
    "Remote",
    "ServerDetail",
    "parse_entry",
    "template_names",
]

OFFICIAL_META = "io.modelcontextprotocol.registry/official"
TEMPLATE = re.compile(r"\{([a-zA-Z_][a-zA-Z0-9_]*)\}")  # a `{name}` in a value or URL


class BadRegistryData(BadRequest):
    """A registry answer or entry that does not fit the API or `server.json`: nothing is installed."""

    action = "Pick another entry, or ask the registry's maintainers to fix this one."


class _Lenient(BaseModel):
    model_config = ConfigDict(extra="ignore", populate_by_name=True, frozen=True)


class Input(_Lenient):
    description: str = Field(default="", max_length=1000)
    isRequired: bool = False
    isSecret: bool = False
    format: str = "string"
    value: str | None = Field(default=None, max_length=2000)
    default: str | None = Field(default=None, max_length=2000)
    placeholder: str | None = Field(default=None, max_length=500)
    choices: list[str] | None = Field(default=None, max_length=100)


class KeyValueInput(Input):
    """A header or an environment variable; its `value` may name its own `variables`."""

    name: str = Field(min_length=1, max_length=200)
    variables: dict[str, Input] = Field(default_factory=dict, max_length=50)


class Argument(Input):
    type: Literal["positional", "named"]
    name: str | None = Field(default=None, max_length=200)  # a named argument's flag, e.g. --port
    valueHint: str | None = Field(default=None, max_length=200)
    isRepeated: bool = False
    variables: dict[str, Input] = Field(default_factory=dict, max_length=50)


class Transport(_Lenient):
    type: Literal["stdio", "streamable-http", "sse"]
    url: str | None = Field(default=None, max_length=2000)
    headers: list[KeyValueInput] = Field(default_factory=list, max_length=50)


class Remote(_Lenient):
    type: Literal["streamable-http", "sse"]
    url: str = Field(pattern=r"^(https?://[^\s]+|\{[a-zA-Z_][a-zA-Z0-9_]*\}[^\s]*)$", max_length=2000)
    headers: list[KeyValueInput] = Field(default_factory=list, max_length=50)
    variables: dict[str, Input] = Field(default_factory=dict, max_length=50)


class Package(_Lenient):
    registryType: str = Field(min_length=1, max_length=50)  # npm, pypi, oci (others are refused at install)
    registryBaseUrl: str | None = Field(default=None, max_length=500)
    identifier: str = Field(min_length=1, max_length=500)
    version: str | None = Field(default=None, min_length=1, max_length=255)
    runtimeHint: str | None = Field(default=None, max_length=50)
    transport: Transport
    runtimeArguments: list[Argument] = Field(default_factory=list, max_length=50)
    packageArguments: list[Argument] = Field(default_factory=list, max_length=100)
    environmentVariables: list[KeyValueInput] = Field(default_factory=list, max_length=100)


class ServerDetail(_Lenient):
    name: str = Field(min_length=3, max_length=200, pattern=r"^[a-zA-Z0-9.-]+/[a-zA-Z0-9._-]+$")
    description: str = Field(min_length=1, max_length=100)
    version: str = Field(min_length=1, max_length=255)
    title: str | None = Field(default=None, min_length=1, max_length=100)
    websiteUrl: str | None = Field(default=None, max_length=2000)
    remotes: list[Remote] = Field(default_factory=list, max_length=20)
    packages: list[Package] = Field(default_factory=list, max_length=20)


@dataclass(frozen=True)
class Need:
    """One value the person installing must (or may) give: a form field."""

    name: str  # the key in the install's `variables`
    description: str = ""
    required: bool = False
    secret: bool = False
    default: str | None = None
    choices: tuple[str, ...] = ()
    placeholder: str | None = None
    where: str = ""  # "url", "header Authorization", "env API_KEY", "argument --port"

    def as_dict(self) -> dict[str, Any]:
        return {
            "name": self.name,
            "description": self.description,
            "required": self.required,
            "secret": self.secret,
            "default": None if self.secret else self.default,
            "choices": list(self.choices),
            "placeholder": self.placeholder,
            "where": self.where,
        }


@dataclass(frozen=True)
class RegistryEntry:
    """One server as a registry lists it: the `server.json`, its registry and its status."""

    registry: str  # the registry's base URL
    server: ServerDetail
    status: str  # `_meta[OFFICIAL_META].status`; "" when the registry gives none
    is_latest: bool = True
    updated_at: str | None = None

    @property
    def name(self) -> str:
        return self.server.name

    @property
    def active(self) -> bool:
        return self.status == "active"

    @property
    def transports(self) -> list[str]:
        """ "http" and "sse" for remotes, "stdio" for packages: in mcp.json's words."""
        found = [_TRANSPORT[r.type] for r in self.server.remotes]
        found += [_TRANSPORT[p.transport.type] for p in self.server.packages]
        return list(dict.fromkeys(found))


_TRANSPORT = {"streamable-http": "http", "sse": "sse", "stdio": "stdio"}


def template_names(text: str) -> list[str]:
    """The `{names}` a template refers to, in order, each once."""
    return list(dict.fromkeys(TEMPLATE.findall(text)))


def parse_entry(item: object, registry: str) -> RegistryEntry:
    """A `ServerResponse` (the list's items and `/versions/latest`'s answer) as an entry, or
    BadRegistryData naming the first field that does not fit."""
    if not isinstance(item, dict) or not isinstance(item.get("server"), dict):
        raise BadRegistryData(f"registry {registry}: an entry is not a ServerResponse (no 'server' object)")
    try:
        server = ServerDetail.model_validate(item["server"])
    except ValidationError as exc:
        first = exc.errors()[0]
        where = ".".join(str(p) for p in first["loc"]) or "server"
        name = item["server"].get("name")
        label = f"'{name}'" if isinstance(name, str) and len(name) <= 200 else "an entry"
        raise BadRegistryData(
            f"registry {registry}: {label} does not fit server.json at '{where}' ({first['msg']})"
        ) from None
    meta = item.get("_meta")
    official = meta.get(OFFICIAL_META) if isinstance(meta, dict) else None
    official = official if isinstance(official, dict) else {}
    status = official.get("status")
    updated = official.get("updatedAt")
    return RegistryEntry(
        registry=registry,
        server=server,
        status=status if isinstance(status, str) else "",
        is_latest=official.get("isLatest") is not False,
        updated_at=updated if isinstance(updated, str) else None,
    )
