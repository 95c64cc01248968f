"""One identity door, one authorization door (docs/architecture.md, "Identity and
authorization").  Identity headers, tokens and groups.yml are read in identity/users.py and
web/authn.py only; group membership is compared in identity/access.py only; every HTTP route
takes its user from the authentication backend, except the few public ones."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest
from fastapi.routing import APIRoute

from switchboard.web import deps
from switchboard.web.app import create_app
from tests.support.harness import make_settings, write_config

PACKAGE = Path(__file__).resolve().parents[2] / "backend" / "switchboard"

# The routes and doors (web/) and what they call (chat/, tools/, llm/) never work out who the user is
# nor compare groups: web/authn.py (with identity/users.py) finds the user, identity/access.py
# answers what they may do.
DOORS = ("web/", "chat/", "tools/", "llm/")
AUTHENTICATION = {"web/authn.py"}
IDENTITY_NAMES = {"identify", "user_for_token", "auth_header", "groups_header", "proxy_secret", "dev_user"}
GROUP_NAMES = {"admin_group", "groups_for", "admits_group", "use_groups"}
IDENTITY_HEADERS = {"authorization", "x-proxy-secret", "x-user-email", "x-user-groups", "x-forwarded-user"}

# Routes anyone may call: liveness, readiness (details for administrators only), files fetched
# by MCP servers through signed URLs, the OAuth client document (public, like a client ID).
PUBLIC = {"/healthz", "/readyz", "/api/files/{file_id}/content", "/oauth/client-metadata.json"}
USER_DEPENDENCIES = {deps.current_user, deps.page_user, deps.page_viewer, deps.metrics_reader}


def sources():
    for path in sorted(PACKAGE.rglob("*.py")):
        rel = str(path.relative_to(PACKAGE))
        if rel.startswith(DOORS):
            yield rel, ast.parse(path.read_text())


def api_routes(routes) -> list[APIRoute]:
    """Every APIRoute, also those of included routers (FastAPI keeps those apart)."""
    found = []
    for route in routes:
        included = getattr(route, "original_router", None)
        found += api_routes(included.routes) if included is not None else [route] if isinstance(route, APIRoute) else []
    return found


def reads(tree: ast.AST, names: set[str]) -> list[str]:
    found = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Attribute) and node.attr in names:
            found.append(f"line {node.lineno}: .{node.attr}")
        elif isinstance(node, ast.Constant) and isinstance(node.value, str) and node.value.lower() in IDENTITY_HEADERS:
            found.append(f"line {node.lineno}: {node.value!r}")
    return found


# llm/ and tools/ send Authorization headers of their own (to providers and MCP servers): not identity.
@pytest.mark.parametrize(
    "rel,tree",
    [s for s in sources() if s[0].startswith(("web/", "chat/")) and s[0] not in AUTHENTICATION | {"web/security.py"}],
    ids=lambda v: v if isinstance(v, str) else "",
)
def test_only_the_authentication_door_reads_identity_headers_and_tokens(rel, tree):
    # web/security.py reads Host and Origin (the edge guard), never who the user is.
    assert reads(tree, IDENTITY_NAMES) == [], f"{rel} works out identity itself; ask web/authn.py's backend"


@pytest.mark.parametrize("rel,tree", list(sources()), ids=lambda v: v if isinstance(v, str) else "")
def test_only_the_authorization_door_reads_group_config(rel, tree):
    found = [f for f in reads(tree, GROUP_NAMES) if "'" not in f]
    assert found == [], f"{rel} compares groups itself; ask access.Access (may_use_server, may_use_model, is_admin)"


def test_the_boundary_check_finds_a_route_that_reads_headers_itself():
    route = ast.parse("async def r(request):\n    return request.headers.get('X-User-Email')\n")
    assert len(reads(route, IDENTITY_NAMES)) == 1
    assert reads(ast.parse("who = request.headers.get(settings.auth_header)"), IDENTITY_NAMES)
    assert reads(ast.parse("ok = config.admits_group(user.groups)"), GROUP_NAMES)


def test_every_route_but_the_public_ones_takes_its_user_from_the_backend(tmp_path):
    write_config(tmp_path / "overrides")
    app = create_app(make_settings(tmp_path))
    routes = api_routes(app.routes)
    unguarded = []
    for route in routes:
        if route.path in PUBLIC:
            continue
        calls = {dependency.call for dependency in route.dependant.dependencies}
        if not calls & USER_DEPENDENCIES:
            unguarded.append(route.path)
    assert unguarded == []
    assert len(routes) > 30 and {r.path for r in routes} >= PUBLIC  # the allowances are real routes
