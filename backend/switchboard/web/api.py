"""The HTTP API (docs/protocol.md, "HTTP")."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Annotated, Any
from urllib.parse import quote

from fastapi import APIRouter, Depends, Query, Request, UploadFile
from fastapi.responses import FileResponse, JSONResponse, Response, StreamingResponse
from pydantic import BaseModel, Field

from ..chat.views.render import render_markdown
from ..errors import BadRequest, NotFound
from ..files.artifacts import ArtifactStore, StoredFile
from ..identity.access import Access
from ..identity.users import User
from .config_view import ConfigView, config_view
from .deps import current_user, services_of
from .readiness import readiness_report
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


@router.get("/api/config", response_model_exclude_unset=True)
async def config(request: Request, user: UserDep, compliance_level: str | None = Query(default=None)) -> ConfigView:
    """What the page knows of the host for this user (and compliance level, when given)."""
    services = services_of(request)
    levels = services.config.compliance
    if compliance_level is not None and not compliance_level.strip():
        compliance_level = None  # `?compliance_level=`: none asked for, as the /v1 header
    if compliance_level is not None and compliance_level not in levels.names:
        raise BadRequest(
            f"unknown compliance level '{compliance_level}'",
            action=f"Use one of: {', '.join(levels.names)}, or leave it out.",
        )
    return await config_view(services, user, Access(user, compliance_level, levels))


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
