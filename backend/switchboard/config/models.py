"""Typed models of the config files (mcp.json, llmconfig.yml, groups.yml,
compliance-levels.json)."""

from __future__ import annotations

from typing import Literal

from pydantic import AliasChoices, BaseModel, ConfigDict, Field, field_validator, model_validator

__all__ = [
    "ComplianceLevel",
    "ComplianceLevels",
    "GroupsConfig",
    "LLMConfig",
    "ModelConfig",
    "ServerConfig",
    "ToolFilter",
]

Transport = Literal["stdio", "sse", "http"]
_TRANSPORT_ALIASES = {
    "streamable-http": "http",
    "streamable_http": "http",
    "streamablehttp": "http",
    "streamableHttp": "http",
    "https": "http",
}


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", populate_by_name=True)


class ToolFilter(_Strict):
    allow: list[str] | None = None
    deny: list[str] = Field(default_factory=list)

    def admits(self, tool: str) -> bool:
        if tool in self.deny:
            return False
        return self.allow is None or tool in self.allow


class ServerConfig(_Strict):
    description: str = ""
    command: str | None = None
    args: list[str] = Field(default_factory=list)
    cwd: str | None = None
    env: dict[str, str] = Field(default_factory=dict)
    url: str | None = None
    headers: dict[str, str] = Field(default_factory=dict)
    transport: Transport | None = Field(default=None, validation_alias=AliasChoices("transport", "type"))
    groups: list[str] = Field(default_factory=lambda: ["*"])
    compliance_level: str | None = None
    enabled: bool = True
    required: bool = False  # /readyz answers 503 while a required server is not ready
    timeout_s: float = Field(default=60.0, gt=0)
    approval: Literal["never", "destructive", "always"] = "destructive"
    require_approval: list[str] = Field(default_factory=list)
    skip_approval: list[str] = Field(default_factory=list)  # tools trusted not to need approval, whatever their annotations say
    tools: ToolFilter | None = None
    roots: list[str] = Field(default_factory=list)
    # May the server ask the conversation's model for completions: ask the user each time
    # (default), allow, or deny. true/false are read as allow/deny.
    sampling: Literal["ask", "allow", "deny"] = "ask"
    file_types: list[str] = Field(default_factory=list)  # e.g. "application/pdf", "text/*", ".csv": attaching one pre-selects this server's tools
    artifact_scripts: bool = False  # HTML artifacts of this (trusted) server may run scripts in their sandbox

    def handles_file(self, name: str, mime: str) -> bool:
        name, mime = name.lower(), mime.lower()
        for pattern in (p.lower() for p in self.file_types):
            if pattern.startswith("."):
                if name.endswith(pattern):
                    return True
            elif pattern.endswith("/*"):
                if mime.startswith(pattern[:-1]):
                    return True
            elif pattern == mime:
                return True
        return False

    @field_validator("sampling", mode="before")
    @classmethod
    def _sampling_bool(cls, value: object) -> object:
        if isinstance(value, bool):
            return "allow" if value else "deny"
        return value

    @field_validator("transport", mode="before")
    @classmethod
    def _alias_transport(cls, value: object) -> object:
        if isinstance(value, str):
            return _TRANSPORT_ALIASES.get(value, value.lower())
        return value

    @model_validator(mode="after")
    def _check_transport(self) -> ServerConfig:
        if self.command and self.url:
            raise ValueError("'command' and 'url' cannot both be set: use 'command' for stdio or 'url' for a remote server")
        if not self.enabled:
            return self
        if not self.command and not self.url:
            raise ValueError("set 'command' (a local stdio server) or 'url' (a remote server)")
        if self.transport is None:
            if self.command:
                self.transport = "stdio"
            else:
                path = (self.url or "").split("?", 1)[0].rstrip("/")
                self.transport = "sse" if path.endswith("/sse") else "http"
        if self.transport == "stdio" and not self.command:
            raise ValueError("transport 'stdio' needs 'command'")
        if self.transport in ("sse", "http") and not self.url:
            raise ValueError(f"transport '{self.transport}' needs 'url'")
        return self

    def admits_group(self, groups: set[str]) -> bool:
        return "*" in self.groups or bool(groups.intersection(self.groups))


class ModelConfig(_Strict):
    name: str = Field(pattern=r"^[A-Za-z0-9._:/-]{1,64}$")
    model: str
    description: str = ""
    api_key_env: str | None = None
    api_base: str | None = None
    groups: list[str] = Field(default_factory=lambda: ["*"])
    compliance_level: str | None = None
    max_tokens: int | None = None
    temperature: float | None = None
    context_window: int | None = None
    extra: dict[str, object] = Field(default_factory=dict)  # passed to litellm as is

    @property
    def is_demo(self) -> bool:
        return self.model.startswith("switchboard/")

    def admits_group(self, groups: set[str]) -> bool:
        return "*" in self.groups or bool(groups.intersection(self.groups))


class LLMConfig(_Strict):
    default_model: str | None = None
    models: list[ModelConfig] = Field(default_factory=list)


class GroupsConfig(_Strict):
    users: dict[str, list[str]] = Field(default_factory=dict)
    admin_group: str = "admin"

    def groups_for(self, email: str) -> list[str]:
        email = email.lower()
        found: list[str] = []
        domain = email.rsplit("@", 1)[-1] if "@" in email else ""
        for pattern, groups in self.users.items():
            pattern = pattern.lower()
            if pattern == email or pattern == "*" or (pattern.startswith("*@") and pattern[2:] == domain):
                found.extend(g for g in groups if g not in found)
        return found


class ComplianceLevel(_Strict):
    name: str
    description: str = ""
    allowed_with: list[str] = Field(default_factory=list)


class ComplianceLevels(_Strict):
    levels: list[ComplianceLevel] = Field(default_factory=list)

    @property
    def names(self) -> list[str]:
        return [level.name for level in self.levels]

    def admits(self, conversation_level: str | None, resource_level: str | None) -> bool:
        """May a resource (server, model) at `resource_level` be used in a
        conversation at `conversation_level`?  An unset conversation level
        admits everything; an unlabelled resource is admitted everywhere."""
        if conversation_level is None or resource_level is None:
            return True
        if conversation_level == resource_level:
            return True
        for level in self.levels:
            if level.name == conversation_level:
                return resource_level in level.allowed_with
        return False
