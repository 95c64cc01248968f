"""The chat page and static files (hashed URLs, no build step)."""

from __future__ import annotations

import hashlib
import re
from pathlib import Path
from typing import TYPE_CHECKING, Annotated

from fastapi import Depends, FastAPI, Request
from fastapi.responses import HTMLResponse
from fastapi.staticfiles import StaticFiles

from .. import __version__
from ..identity.access import Access
from ..identity.users import User
from ..settings import Settings
from .deps import page_viewer, services_of
from .sandbox.origin import page_csp

if TYPE_CHECKING:
    from fastapi.templating import Jinja2Templates

__all__ = ["mount"]


class _HashedStatic:
    """`static('app.js')` -> `/static/app.js?v=<content hash>`, computed once."""

    def __init__(self, root: Path) -> None:
        self._root = root
        self._hashes: dict[str, str] = {}

    def __call__(self, path: str) -> str:
        digest = self._hashes.get(path)
        if digest is None:
            try:
                digest = hashlib.sha256((self._root / path).read_bytes()).hexdigest()[:12]
            except OSError:
                digest = __version__
            self._hashes[path] = digest
        return f"/static/{path}?v={digest}"


# A static `import ... from "./x.js"` (or `export ... from`, or a bare `import "./x.js"`); a
# dynamic `import("./x.js")` is a feature loaded when used, not preloaded.
_STATIC_IMPORT = re.compile(
    r"""^\s*(?:import|export)\s[^;]*?\sfrom\s+["'](\./[^"']+)["']|^\s*import\s+["'](\./[^"']+)["']""", re.M
)


class _ModuleGraph:
    """`modules('app.js')`: every module the entry imports, directly or not, computed once. The
    page names them all in `<link rel="modulepreload">`, so the browser fetches them at once
    instead of finding the imports one level at a time (a round trip per level)."""

    def __init__(self, root: Path) -> None:
        self._root = root
        self._found: dict[str, list[str]] = {}

    def __call__(self, entry: str) -> list[str]:
        found = self._found.get(entry)
        if found is None:
            seen: set[str] = set()
            todo = [entry]
            while todo:
                module = todo.pop()
                if module in seen or not (self._root / module).is_file():
                    continue
                seen.add(module)
                text = (self._root / module).read_text(encoding="utf-8")
                todo.extend((a or b)[2:] for a, b in _STATIC_IMPORT.findall(text))
            found = self._found[entry] = sorted(seen - {entry})
        return found


class _Pages:
    """The page templates, loaded with the first page (Jinja2 is not needed before)."""

    def __init__(self, frontend: Path) -> None:
        self._frontend = frontend
        self._templates: Jinja2Templates | None = None

    def render(self, request: Request, name: str, context: dict[str, object]) -> HTMLResponse:
        if self._templates is None:
            from fastapi.templating import Jinja2Templates

            templates = Jinja2Templates(directory=str(self._frontend / "templates"))
            templates.env.globals["static"] = _HashedStatic(self._frontend / "static")
            templates.env.globals["modules"] = _ModuleGraph(self._frontend / "static")
            self._templates = templates
        return self._templates.TemplateResponse(request, name, context)


def mount(app: FastAPI, settings: Settings) -> None:
    frontend = settings.project_root / "frontend"
    templates = _Pages(frontend)
    app.mount("/static", StaticFiles(directory=str(frontend / "static")), name="static")

    @app.get("/", response_class=HTMLResponse, include_in_schema=False)
    async def chat_page(request: Request, user: Annotated[User, Depends(page_viewer)]) -> HTMLResponse:
        services = services_of(request)
        sandbox = request.app.state.sandbox.origin_for(request.url.scheme, request.headers.get("host", ""))
        page = {
            "user": user.email,
            "groups": sorted(user.groups),
            "version": __version__,
            "ws_path": "/ws?html=rest",  # the page keeps the renders it drew (docs/protocol.md)
            "config_url": "/api/config",
            "upload_url": "/api/files",
            "max_upload_bytes": services.settings.max_upload_bytes,
            "sandbox_origin": sandbox,
            "apps_url": "/api/apps",
        }
        sealed = request.query_params.get("signin_notice")  # a Connect that failed (web/connect.py)
        notice = services.signer.open_notice(user.email, sealed) if sealed else None
        admin = Access(user).allowed("administer")  # the top bar's Admin link: decided here, not in the page
        response = templates.render(request, "chat.html", {"page": page, "signin_notice": notice, "is_admin": admin})
        response.headers["content-security-policy"] = page_csp(sandbox)
        return response

    @app.get("/settings/tokens", response_class=HTMLResponse, include_in_schema=False)
    async def tokens_page(request: Request, user: Annotated[User, Depends(page_viewer)]) -> HTMLResponse:
        """Personal API tokens: make, list, revoke (the routes under /api/tokens)."""
        return templates.render(request, "tokens.html", {"page": {"user": user.email}})

    @app.get("/admin", response_class=HTMLResponse, include_in_schema=False)
    async def admin_page(request: Request, user: Annotated[User, Depends(page_viewer)]) -> HTMLResponse:
        """The admin console: a client of /api/admin/... (servers, tools, users, audit)."""
        if not Access(user).allowed("administer"):
            response = templates.render(request, "forbidden.html", {"page": {"user": user.email}})
            response.status_code = 403
            return response
        return templates.render(request, "admin.html", {"page": {"user": user.email}})
