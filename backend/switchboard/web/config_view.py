"""`GET /api/config` as typed models: what the page knows of the host for one user (models,
servers, tools, resources, prompts, compliance levels), described field by field in
`/openapi.json`. A field that is only sometimes there (an administrator's `stderr_tail`, a
per-user server's `auth`, an app tool's `app`) is left out of the JSON when unset."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from pydantic import BaseModel

from ..chat.calls.approvals import approval_reason
from ..chat.gateway import exposure_report
from ..identity.access import Access
from ..identity.users import User
from .connect import auth_entry
from .readiness import config_problems

if TYPE_CHECKING:
    from ..services import Services

__all__ = ["ConfigView", "config_view"]

HIDDEN_REASON = "unavailable right now; your administrator can see why"


class UserView(BaseModel):
    email: str
    groups: list[str]
    admin: bool


class ResourceView(BaseModel):
    server: str
    uri: str
    name: str
    description: str | None
    mime: str | None


class ResourceTemplateView(BaseModel):
    server: str
    uri_template: str
    name: str
    description: str | None


class PromptView(BaseModel):
    server: str
    name: str
    description: str | None
    arguments: list[dict[str, Any]]  # the server's own argument descriptions, as it sent them


class GatewayView(BaseModel):
    """Would this model get the tool gateway for the user's tools (docs/models.md)."""

    exposure: str
    threshold_tokens: int
    tool_tokens: int
    tools: int
    active: bool


class ModelView(BaseModel):
    name: str
    description: str
    available: bool
    reason: str | None
    demo: bool
    failing: str | None
    gateway: GatewayView | None


class ComplianceLevelView(BaseModel):
    name: str
    description: str


class AuthView(BaseModel):
    """A per-user server's connection for this user; never the credential."""

    type: str
    connected: bool
    refused: str | None = None
    connect_url: str | None = None
    token_url: str | None = None
    disconnect_url: str


class ServerView(BaseModel):
    name: str
    description: str
    status: str
    reason: str | None
    transport: str
    protocol_version: str | None
    compliance_level: str | None
    file_types: list[str]
    tools: list[str]
    stderr_tail: str | None = None  # administrators only
    stderr_log: str | None = None  # administrators only
    auth: AuthView | None = None  # per-user servers the user may use


class ToolAppView(BaseModel):
    resource_uri: str | None
    visibility: list[str]


class ToolView(BaseModel):
    name: str
    server: str
    tool: str
    title: str | None
    description: str
    input_schema: dict[str, Any]
    annotations: dict[str, Any]
    requires_approval: bool
    trust: str  # approved | pending | changed | blocked: only approved tools are used
    app: ToolAppView | None = None  # MCP Apps: the tool's app, and who may call it


class ConfigView(BaseModel):
    user: UserView
    resources: list[ResourceView]
    resource_templates: list[ResourceTemplateView]
    prompts: list[PromptView]
    models: list[ModelView]
    default_model: str | None
    default_note: str | None
    compliance_levels: list[ComplianceLevelView]
    servers: list[ServerView]
    tools: list[ToolView]
    config_errors: list[str] | None = None  # administrators: every config error
    config_note: str | None = None  # others: a whole config file is broken


async def config_view(services: Services, user: User, access: Access) -> ConfigView:
    cfg = services.config
    admin = access.is_admin()
    tools = services.pool.registry.visible(access)
    configured = {model.name: model for model in cfg.llm.models}
    # remembered: every open page asks after a catalogue change
    tool_tokens = services.engine.tool_tokens([t for t in tools if t.model_visible and t.approved])
    servers = []
    for status in services.pool.statuses():
        server_cfg = cfg.mcp.servers.get(status.name)
        if not access.may_see_server(server_cfg):
            continue
        reason = status.reason if admin or not status.reason else HIDDEN_REASON
        extra: dict[str, Any] = {"stderr_tail": status.stderr_tail, "stderr_log": status.stderr_log} if admin else {}
        server = ServerView(
            name=status.name,
            description=server_cfg.description if server_cfg else "",
            status=status.status,
            reason=reason,
            transport=status.transport,
            protocol_version=status.protocol_version,
            compliance_level=server_cfg.compliance_level if server_cfg else None,
            file_types=server_cfg.file_types if server_cfg else [],
            tools=[t.qualified_name for t in tools if t.server == status.name],
            **extra,
        )
        if server_cfg is not None and server_cfg.sessions_per_user and access.may_use_server(server_cfg):
            # This user's own session, as it is: a GET opens none (a turn does, or Connect).
            mine = await services.pool.user_status(status.name, user.email)
            server.status = mine.status
            server.reason = mine.reason if admin or mine.status != "failed" else reason
            server.protocol_version = mine.protocol_version or status.protocol_version
            found = await auth_entry(services, user, status.name)
            server.auth = AuthView(**found) if found is not None else None
        servers.append(server)
    problems = config_problems(services, admin)  # broken config files are never quiet
    return ConfigView(
        user=UserView(email=user.email, groups=sorted(user.groups), admin=admin),
        **_listings(services, user, access),
        models=[
            ModelView(
                name=m.name,
                description=m.description,
                available=m.available,
                reason=m.reason,
                demo=m.is_demo,
                failing=m.failing,
                gateway=GatewayView(
                    **exposure_report(configured[m.name], cfg.llm, tool_tokens, sum(t.model_visible for t in tools))
                )
                if m.name in configured
                else None,
            )
            for m in services.models.entries(access)
        ],
        default_model=services.models.default_model_name(access),
        default_note=services.models.default_note(access),
        compliance_levels=[
            ComplianceLevelView(name=level.name, description=level.description) for level in cfg.compliance.levels
        ],
        servers=servers,
        tools=[_tool(tool, cfg.mcp.servers[tool.server]) for tool in tools],
        **problems,
    )


def _tool(tool: Any, server_cfg: Any) -> ToolView:
    app = (
        {"app": ToolAppView(resource_uri=tool.app_uri, visibility=list(tool.visibility))}
        if tool.app_uri is not None or not tool.model_visible
        else {}
    )
    return ToolView(
        name=tool.qualified_name,
        server=tool.server,
        tool=tool.name,
        title=tool.title,
        description=tool.description,
        input_schema=tool.input_schema,
        annotations=tool.annotations,
        requires_approval=approval_reason(tool, server_cfg, set()) is not None,
        trust=tool.trust,
        **app,
    )


def _listings(services: Services, user: User, access: Access) -> dict[str, Any]:
    """The resources, resource templates and prompts of the servers this user may use."""
    resources: list[ResourceView] = []
    templates: list[ResourceTemplateView] = []
    prompts: list[PromptView] = []
    for status in services.pool.statuses():
        if not services.pool.registry.server_admits(status.name, access):
            continue
        listed, listed_templates, listed_prompts = services.pool.resources_of(status.name, user.email)
        resources += [
            ResourceView(server=status.name, uri=str(r.uri), name=r.name, description=r.description, mime=r.mime_type)
            for r in listed
        ]
        templates += [
            ResourceTemplateView(
                server=status.name, uri_template=t.uri_template, name=t.name, description=t.description
            )
            for t in listed_templates
        ]
        prompts += [
            PromptView(
                server=status.name,
                name=p.name,
                description=p.description,
                arguments=[a.model_dump(exclude_none=True) for a in p.arguments or []],
            )
            for p in listed_prompts
        ]
    return {"resources": resources, "resource_templates": templates, "prompts": prompts}
