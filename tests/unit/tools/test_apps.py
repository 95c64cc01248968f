"""MCP Apps on the server side: app tools in both meta forms, their visibility, the app's
resource read from the same server (CSP origins checked, permissions), pinning, and the
extension advertised to servers. The test server runs in memory."""

from __future__ import annotations

import logging
from pathlib import Path

import pytest

from switchboard.config.loader import McpConfig
from switchboard.config.models import ServerConfig
from switchboard.tools import ServerPool
from switchboard.tools.apps import app_fields, check_csp, permissions_of
from tests.support.servers.apps import mcp as apps_server


class _Sink:
    async def progress(self, *args): ...

    async def log(self, *args): ...


@pytest.fixture
async def pool(tmp_path: Path):
    pool = ServerPool(
        McpConfig(servers={"apps": ServerConfig(url="http://in-memory.invalid/mcp")}),
        project_root=tmp_path,
        log_dir=tmp_path,
        in_memory={"apps": apps_server},
    )
    pool.start()
    await pool.wait_settled(10)
    yield pool
    await pool.stop()


def test_both_meta_forms_name_the_app_and_visibility_defaults_to_both():
    assert app_fields({"ui": {"resourceUri": "ui://a/b.html"}}) == ("ui://a/b.html", ("model", "app"))
    assert app_fields({"ui/resourceUri": "ui://a/b.html"}) == ("ui://a/b.html", ("model", "app"))
    assert app_fields({"ui": {"visibility": ["app"]}}) == (None, ("app",))
    assert app_fields({"ui": {"resourceUri": "https://evil.example/app.html"}}) == (None, ("model", "app"))
    assert app_fields({"ui": {"visibility": "app"}}) == (None, ("model", "app"))  # malformed: the default
    assert app_fields(None) == (None, ("model", "app"))


def test_csp_keeps_origins_only_and_logs_what_it_drops(caplog):
    declared = {
        "connectDomains": [
            "https://api.example.com",
            "wss://live.example.com:8443",
            "http://localhost:5173",
            "http://evil.example.com",
            "https://x.example.com/path",
            "*",
            "'unsafe-eval'",
            "https://user:pw@example.com",
            "javascript:alert(1)",
            "https://a.example.com?q=1",
            7,
        ],
        "resourceDomains": ["https://*.cdn.example.com", "wss://live.example.com", "data:", "https://*"],
        "frameDomains": "https://not-a-list.example.com",
    }
    with caplog.at_level(logging.WARNING, logger="switchboard.tools"):
        csp = check_csp(declared, server="s", uri="ui://s/app.html")

    assert csp == {
        "connectDomains": ["https://api.example.com", "wss://live.example.com:8443", "http://localhost:5173"],
        "resourceDomains": ["https://*.cdn.example.com"],
        "frameDomains": [],
        "baseUriDomains": [],
    }
    dropped = [r for r in caplog.records if getattr(r, "event", "") == "app_csp_dropped"]
    assert len(dropped) == 11 and {r.entry for r in dropped} >= {"http://evil.example.com", "*", "data:"}


def test_permissions_need_the_resource_and_the_operator():
    declared = {"camera": {}, "clipboardWrite": {}, "geolocation": {}}
    assert permissions_of(declared, []) == {}
    assert permissions_of(declared, ["clipboard-write", "microphone"]) == {"clipboardWrite": {}}


async def test_app_tools_and_their_visibility_are_recognized(pool):
    tools = {t.name: t for t in pool.registry.all()}

    assert tools["show_counter"].app_uri == tools["legacy_counter"].app_uri == "ui://counter/app.html"
    assert tools["bump"].visibility == ("app",) and not tools["bump"].model_visible
    assert tools["model_only"].visibility == ("model",)
    assert tools["ui_extension"].app_uri is None and tools["ui_extension"].model_visible


async def test_the_host_advertises_the_extension_to_servers(pool):
    outcome = await pool.call(pool.registry.get("apps_ui_extension"), {}, _Sink())
    assert outcome.text == "ui=True"


async def test_the_app_is_read_from_its_server_with_checked_csp_and_cached(pool):
    tool = pool.registry.get("apps_show_counter")
    app = await pool.app_resource(tool)

    assert app.uri == "ui://counter/app.html" and "ui/initialize" in app.html
    assert app.csp["connectDomains"] == ["https://api.example.com"]
    assert app.csp["resourceDomains"] == ["https://*.cdn.example.com"]
    assert app.permissions_declared == {"camera": {}, "clipboardWrite": {}} and app.prefers_border is True
    assert await pool.app_resource(tool) is app  # cached


async def test_the_whole_mcp_result_is_kept_when_asked(pool):
    outcome = await pool.call(pool.registry.get("apps_show_counter"), {"start": 4}, _Sink(), raw=True)
    result = outcome.mcp_result

    assert result["structuredContent"] == {"count": 4} and result["isError"] is False
    assert result["content"] == [{"type": "text", "text": "counter at 4"}]
    assert result["_meta"]["shown_by"] == "apps"


async def test_a_changed_app_is_a_changed_definition(pool):
    tool = pool.registry.get("apps_show_counter")
    assert pool.registry.check_app(tool, "digest-1") is False  # first seen: pinned
    assert pool.registry.check_app(tool, "digest-1") is False
    assert pool.registry.check_app(tool, "digest-2") is True
    pool.registry.accept_app(tool, "digest-2")  # an administrator approved it
    assert pool.registry.check_app(tool, "digest-2") is False
