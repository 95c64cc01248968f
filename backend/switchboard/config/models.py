"""Typed models of the config files (mcp.json, llmconfig.yml, groups.yml,
compliance-levels.json)."""

from __future__ import annotations

from typing import Annotated, Literal

from pydantic import AliasChoices, BaseModel, ConfigDict, Field, field_validator, model_validator

__all__ = [
    "AuthConfig",
    "ComplianceLevel",
    "ComplianceLevels",
    "GroupsConfig",
    "LLMConfig",
    "ModelConfig",
    "OAuthConfig",
    "ServerConfig",
    "ToolFilter",
    "UserTokenConfig",
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


class OAuthConfig(_Strict):
    """MCP authorization (OAuth 2.1): discovery, registration, PKCE and refresh by the MCP SDK."""

    type: Literal["oauth"]
    scopes: list[str] | None = None  # default: what the server's metadata asks for
    client_id: str | None = None  # a pre-registered client; else dynamic client registration
    client_secret: str | None = None
    grant: Literal["authorization_code", "client_credentials"] = "authorization_code"
    # The authorization server the client (above) belongs to: with it, a client_credentials
    # secret is only ever sent to that server, whatever the MCP server's metadata names.
    issuer: str | None = None
    # client_credentials with private_key_jwt (RFC 7523) instead of a secret: a PEM key, as an
    # environment reference; the host signs a short-lived assertion for each token request.
    private_key: str | None = None
    signing_algorithm: str = "RS256"
    # Let this server's sign-in reach loopback, link-local and private addresses (and plain
    # http there): for an authorization server inside your own network.  Off by default, as
    # the MCP server chooses where its sign-in leads.
    allow_private_endpoints: bool = False

    @field_validator("scopes", mode="before")
    @classmethod
    def _split_scopes(cls, value: object) -> object:
        return value.split() if isinstance(value, str) else value

    @model_validator(mode="after")
    def _check_grant(self) -> OAuthConfig:
        if self.grant == "client_credentials" and not (self.client_id and (self.client_secret or self.private_key)):
            raise ValueError(
                "grant 'client_credentials' needs 'client_id' and 'client_secret' or 'private_key' (as an "
                'environment reference, e.g. "${SERVICE_CLIENT_SECRET}")'
            )
        if self.private_key and self.grant != "client_credentials":
            raise ValueError("'private_key' is for grant 'client_credentials'")
        return self


class UserTokenConfig(_Strict):
    """Each user enters their own token in the page; it is sent as `header: format`."""

    type: Literal["user_token"]
    header: str = "Authorization"
    format: str = "Bearer {token}"

    @field_validator("format")
    @classmethod
    def _has_token(cls, value: str) -> str:
        if "{token}" not in value:
            raise ValueError("'format' must contain {token}, e.g. \"Bearer {token}\"")
        return value


AuthConfig = Annotated[OAuthConfig | UserTokenConfig, Field(discriminator="type")]


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
    # auto: the first definition of each tool is approved (config files); review: an administrator
    # approves it first. A changed definition waits for an administrator either way (tools/trust.py).
    trust: Literal["auto", "review"] = "auto"
    require_approval: list[str] = Field(default_factory=list)
    skip_approval: list[str] = Field(
        default_factory=list
    )  # tools trusted not to need approval, whatever their annotations say
    tools: ToolFilter | None = None
    roots: list[str] = Field(default_factory=list)
    # May the server ask the conversation's model for completions: ask the user each time
    # (default), allow, or deny. true/false are read as allow/deny.
    sampling: Literal["ask", "allow", "deny"] = "ask"
    # e.g. "application/pdf", "text/*", ".csv": attaching one pre-selects this server's tools, and
    # its tools get such a file when the model names none (chat/calls/file_choice.py)
    file_types: list[str] = Field(default_factory=list)
    artifact_scripts: bool = False  # HTML artifacts of this (trusted) server may run scripts in their sandbox
    auth: AuthConfig | None = None  # a remote server that needs sign-in
    # One MCP session per (server, user); default: true when the credential is the user's.
    per_user: bool | None = None
    idle_close_s: float = Field(default=600.0, gt=0)  # a user's idle session is closed after this
    max_user_sessions: int = Field(default=100, ge=1)  # per server; the least recently used is closed
    owner: str | None = None  # a user's own server (user_servers.py): only this user sees and calls it
    # A user's own server: every request (redirects too) goes only to an address the endpoint policy
    # checked then ("all"), or but for the server's own origin, a host the operator allowed ("others").
    guard_requests: Literal["none", "all", "others"] = "none"
    # Browser permissions this server's MCP Apps may have, when their resource declares them too.
    app_permissions: list[Literal["camera", "microphone", "geolocation", "clipboard-write"]] = Field(
        default_factory=list
    )

    @property
    def user_credential(self) -> bool:
        """Whether each user brings their own credential (their token or their sign-in)."""
        auth = self.auth
        return auth is not None and (auth.type == "user_token" or auth.grant == "authorization_code")

    @property
    def sessions_per_user(self) -> bool:
        return self.per_user if self.per_user is not None else self.user_credential

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
            raise ValueError(
                "'command' and 'url' cannot both be set: use 'command' for stdio or 'url' for a remote server"
            )
        if self.auth is not None and not self.url:
            raise ValueError("'auth' is for remote servers ('url'); a stdio server never gets a user's credential")
        if self.user_credential and self.per_user is False:
            raise ValueError(
                "'per_user' cannot be false when each user signs in: one user's session would serve another"
            )
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
    # Stream straight through the OpenAI SDK when litellm resolves the model to an
    # OpenAI-compatible endpoint (cheaper per call); false: always through litellm.
    direct: bool = True
    # How the offered tools reach the model: every definition (`all`), the three gateway tools
    # (`gateway`), or the gateway once the definitions pass the threshold (`auto`).
    tool_exposure: Literal["all", "gateway", "auto"] = "auto"
    gateway_threshold_tokens: int | None = Field(default=None, ge=0)  # None: the llmconfig.yml-wide value

    @property
    def is_demo(self) -> bool:
        return self.model.startswith("switchboard/")

    def admits_group(self, groups: set[str]) -> bool:
        return "*" in self.groups or bool(groups.intersection(self.groups))


class LLMConfig(_Strict):
    default_model: str | None = None
    # Set by the loader when the overrides file names the default: then it is honoured even
    # for the demo model (the shipped `default_model: demo` gives way to any usable real model).
    default_is_site_choice: bool = Field(default=False, exclude=True)
    models: list[ModelConfig] = Field(default_factory=list)
    gateway_threshold_tokens: int = Field(default=4000, ge=0)  # `auto` exposure: estimated tokens of tool definitions


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
