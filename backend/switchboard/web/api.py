"""The HTTP API (docs/protocol.md, "HTTP")."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Annotated, Any
from urllib.parse import quote

from fastapi import APIRouter, Depends, Query, Request, UploadFile
from fastapi.responses import FileResponse, JSONResponse, Response, StreamingResponse
from pydantic import BaseModel, Field

from ..chat.calls.approvals import approval_reason
from ..chat.gateway import exposure_report
from ..chat.views.render import render_markdown
from ..errors import BadRequest, NotFound
from ..files.artifacts import ArtifactStore, StoredFile
from ..identity.access import Access
from ..identity.users import User
from .connect import auth_entry
from .deps import current_user, services_of
from .readiness import config_problems, readiness_report
from .sandbox.artifact_theme import follow_page_theme, quiet_network
from .security import ARTIFACT_CSP, ARTIFACT_CSP_SCRIPTS, PDF_CSP

__all__ = ["router"]

router = APIRouter()
UserDep = Annotated[User, Depends(current_user)]


@router.get("/healthz")
async def healthz() -> dict[str, str]:
    return {"status": "ok"}


@router.get("/readyz")
async def readyz(request: Request) -> JSONResponse:
    """200 once every enabled server has left `starting`, unless a required server is not
    ready or a config file is broken.  Counts for anyone; server names and reasons for admins."""
    return JSONResponse(*await readiness_report(request))


@router.get("/api/config")
async def config(request: Request, user: UserDep, compliance_level: str | None = Query(default=None)) -> dict[str, Any]:
    services = services_of(request)
    cfg = services.config
    if compliance_level is not None and not compliance_level.strip():
        compliance_level = None  # `?compliance_level=`: none asked for, as the /v1 header
    if compliance_level is not None and compliance_level not in cfg.compliance.names:
        raise BadRequest(
            f"unknown compliance level '{compliance_level}'",
            action=f"Use one of: {', '.join(cfg.compliance.names)}, or leave it out.",
        )
    access = Access(user, compliance_level, cfg.compliance)
    admin = access.is_admin()
    models = services.models.entries(access)
    tools = services.pool.registry.visible(access)
    configured = {model.name: model for model in cfg.llm.models}
    tool_tokens = services.engine.tool_tokens(
        [t for t in tools if t.model_visible and t.approved]
    )  # remembered: every open page asks after a catalogue change
    servers = []
    for status in services.pool.statuses():
        server_cfg = cfg.mcp.servers.get(status.name)
        may_use = access.may_use_server(server_cfg)
        if not access.may_see_server(server_cfg):
            continue
        reason = status.reason
        if reason and not admin:
            reason = "unavailable right now; your administrator can see why"
        entry: dict[str, Any] = {
            "name": status.name,
            "description": server_cfg.description if server_cfg else "",
            "status": status.status,
            "reason": reason,
            "transport": status.transport,
            "protocol_version": status.protocol_version,
            "compliance_level": server_cfg.compliance_level if server_cfg else None,
            "file_types": server_cfg.file_types if server_cfg else [],
            "tools": [t.qualified_name for t in tools if t.server == status.name],
        }
        if admin:
            entry["stderr_tail"], entry["stderr_log"] = status.stderr_tail, status.stderr_log
        if server_cfg is not None and server_cfg.sessions_per_user and may_use:
            # This user's own session, as it is: a GET opens none (a turn does, or Connect).
            mine = await services.pool.user_status(status.name, user.email)
            entry["status"], entry["reason"] = mine.status, mine.reason if admin or mine.status != "failed" else reason
            entry["protocol_version"] = mine.protocol_version or status.protocol_version
            entry["auth"] = await auth_entry(services, user, status.name)
        servers.append(entry)
    tool_entries = []
    for tool in tools:
        server_cfg = cfg.mcp.servers[tool.server]
        tool_entries.append(
            {
                "name": tool.qualified_name,
                "server": tool.server,
                "tool": tool.name,
                "title": tool.title,
                "description": tool.description,
                "input_schema": tool.input_schema,
                "annotations": tool.annotations,
                "requires_approval": approval_reason(tool, server_cfg, set()) is not None,
                "trust": tool.trust,  # approved | pending | changed | blocked: only approved tools are used
                # MCP Apps: the tool's app, and who may call it (app-only tools are never the model's)
                **(
                    {"app": {"resource_uri": tool.app_uri, "visibility": list(tool.visibility)}}
                    if tool.app_uri is not None or not tool.model_visible
                    else {}
                ),
            }
        )
    resources, templates, prompts = [], [], []
    for status in services.pool.statuses():
        if not services.pool.registry.server_admits(status.name, access):
            continue
        listed, listed_templates, listed_prompts = services.pool.resources_of(status.name, user.email)
        resources += [
            {
                "server": status.name,
                "uri": str(r.uri),
                "name": r.name,
                "description": r.description,
                "mime": r.mime_type,
            }
            for r in listed
        ]
        templates += [
            {"server": status.name, "uri_template": t.uri_template, "name": t.name, "description": t.description}
            for t in listed_templates
        ]
        prompts += [
            {
                "server": status.name,
                "name": p.name,
                "description": p.description,
                "arguments": [a.model_dump(exclude_none=True) for a in p.arguments or []],
            }
            for p in listed_prompts
        ]
    return {
        "user": {"email": user.email, "groups": sorted(user.groups), "admin": admin},
        "resources": resources,
        "resource_templates": templates,
        "prompts": prompts,
        "models": [
            {
                "name": m.name,
                "description": m.description,
                "available": m.available,
                "reason": m.reason,
                "demo": m.is_demo,
                "failing": m.failing,
                "gateway": exposure_report(
                    configured[m.name], cfg.llm, tool_tokens, sum(t.model_visible for t in tools)
                )
                if m.name in configured
                else None,
            }
            for m in models
        ],
        "default_model": services.models.default_model_name(access),
        "default_note": services.models.default_note(access),
        "compliance_levels": [
            {"name": level.name, "description": level.description} for level in cfg.compliance.levels
        ],
        "servers": servers,
        "tools": tool_entries,
        **config_problems(services, admin),  # broken config files are never quiet
    }


class PromptRequest(BaseModel):
    server: str
    name: str
    arguments: dict[str, str] = Field(default_factory=dict)
    compliance_level: str | None = None


@router.post("/api/prompts")
async def use_prompt(request: Request, user: UserDep, body: PromptRequest) -> dict[str, Any]:
    """A server's prompt, filled in, to start a message from."""
    services = services_of(request)
    access = Access(user, body.compliance_level, services.config.compliance)
    if not services.pool.registry.server_admits(body.server, access):
        raise NotFound(f"there is no server named '{body.server}' for you")
    messages = await services.pool.get_prompt(body.server, body.name, body.arguments, user=user.email)
    return {
        "messages": [{"role": role, "text": text} for role, text in messages],
        "text": "\n\n".join(text for _, text in messages),
    }


@router.post("/api/files")
async def upload(request: Request, user: UserDep, file: UploadFile) -> dict[str, Any]:
    services = services_of(request)
    limit = services.settings.max_upload_bytes
    # The body is already spooled to a temporary file (multipart parsing): it goes on from there
    # in parts, never read whole into memory.
    size = file.size if file.size is not None else await asyncio.to_thread(lambda: file.file.seek(0, 2))
    await file.seek(0)
    if size > limit:
        raise BadRequest(
            f"the file is larger than the {limit // (1024 * 1024)} MB upload limit",
            action="Attach a smaller file, or ask your administrator to raise SWITCHBOARD_MAX_UPLOAD_BYTES.",
        )
    # Quota check and writing touch the disk: in a worker thread, not on the event loop.
    stored = await asyncio.to_thread(
        services.artifacts.put_upload,
        owner=user.email,
        name=file.filename or "upload",
        mime=file.content_type or "",
        data=file.file,
        size=size,
        max_bytes=services.settings.max_upload_bytes_per_user,
        max_files=services.settings.max_uploads_per_user,
    )
    suggested = [
        tool.qualified_name
        for tool in services.pool.registry.for_model(Access(user, None, services.config.compliance))
        if (cfg := services.pool.server_config(tool.server)) is not None and cfg.handles_file(stored.name, stored.mime)
    ]
    # `suggested_tools`: the tools that handle this kind of file (config `file_types`); the page pre-selects them.
    return {
        "id": stored.id,
        "name": stored.name,
        "mime": stored.mime,
        "size": stored.size,
        "suggested_tools": suggested,
    }


@router.get("/api/files/{file_id}/content")
async def signed_file(request: Request, file_id: str, u: str, e: int, s: str) -> Response:
    """An upload fetched by an MCP server through a signed, expiring URL (no session)."""
    services = services_of(request)
    services.signer.verify(file_id, u, e, s)
    stored, path = await services.artifacts.aget(file_id, owner=u)
    return _file_response(
        services.artifacts,
        stored,
        path,
        media_type="application/octet-stream" if stored.mime in ("text/html", "image/svg+xml") else stored.mime,
        disposition="attachment",
        headers={"Content-Security-Policy": ARTIFACT_CSP, "Cache-Control": "no-store"},
    )


@router.get("/api/artifacts/{file_id}/rendered")
async def rendered_artifact(request: Request, user: UserDep, file_id: str) -> dict[str, str]:
    """A markdown artifact rendered to sanitized HTML, for the canvas."""
    files = services_of(request).artifacts
    stored, _ = await files.aget(file_id, owner=user.email)
    if stored.mime not in ("text/markdown", "text/x-markdown") and not stored.name.endswith((".md", ".markdown")):
        raise BadRequest("only markdown artifacts can be rendered")
    text = (await files.aread(stored)).decode("utf-8", errors="replace")
    return {"html": render_markdown(text)}


_INLINE_SAFE = (
    "image/png",
    "image/jpeg",
    "image/gif",
    "image/webp",
    "application/pdf",
    "text/plain",
    "text/csv",
    "text/markdown",
    "application/json",
)


@router.get("/api/artifacts/{file_id}")
async def artifact(request: Request, user: UserDep, file_id: str, download: bool = False) -> Response:
    files = services_of(request).artifacts
    stored, path = await files.aget(file_id, owner=user.email)
    # HTML and SVG are only ever rendered inside the CSP sandbox (an opaque
    # origin that cannot reach the app); anything else unknown is a download.
    inline = not download and (stored.mime in _INLINE_SAFE or stored.mime in ("text/html", "image/svg+xml"))
    media_type = stored.mime if inline else "application/octet-stream"
    if stored.mime.startswith("text/") or stored.mime == "application/json":
        media_type = f"{stored.mime}; charset=utf-8" if inline else media_type
    # Scripts run only for artifacts of servers trusted with `artifact_scripts`;
    # the rule is this header, whatever sandbox the page puts on its frame.
    csp = ARTIFACT_CSP_SCRIPTS if stored.scripts else ARTIFACT_CSP
    headers = {
        "Content-Security-Policy": PDF_CSP if media_type == "application/pdf" else csp,
        "Cache-Control": "private, max-age=3600",
        "X-Artifact-Scripts": "allowed" if stored.scripts else "blocked",
    }
    if inline and stored.mime == "text/html":
        headers["Content-Disposition"] = "inline"
        body = await asyncio.to_thread(lambda: quiet_network(follow_page_theme(files.read(stored))))
        return Response(body, media_type=media_type, headers=headers)
    return _file_response(
        files, stored, path, media_type=media_type, disposition="inline" if inline else "attachment", headers=headers
    )


def _file_response(
    files: ArtifactStore,
    stored: StoredFile,
    path: Path | None,
    *,
    media_type: str,
    disposition: str,
    headers: dict[str, str],
) -> Response:
    """A file from the folder as is (sendfile), or from a bucket as a stream of chunks."""
    if path is not None:
        return FileResponse(
            path, media_type=media_type, filename=stored.name, content_disposition_type=disposition, headers=headers
        )
    headers = {
        **headers,
        "Content-Length": str(stored.size),
        "Content-Disposition": f"{disposition}; filename*=utf-8''{quote(stored.name)}",
    }
    return StreamingResponse(files.chunks(stored), media_type=media_type, headers=headers)
