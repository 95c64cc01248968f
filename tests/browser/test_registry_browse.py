"""The "Browse servers" dialog of the tools panel: the registries' entries a user could install
(name, description, version, transport, what each needs), searched, rendered as text only, and
a registry that went down shown from its last answer with a warning."""

from __future__ import annotations

import pytest
from playwright.sync_api import expect

from switchboard.services import build_services
from switchboard.web.app import create_app
from tests.browser.conftest import LiveServer
from tests.support.harness import free_port, make_settings, write_config
from tests.support.registry_double import RegistryDouble, package_server, remote_server

HOSTILE = '<img src=x onerror="window.__pwned=1">Weather'


@pytest.fixture(scope="module")
def registry_site(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("registry-browse")
    write_config(tmp / "defaults", groups={"dev@localhost": ["users"]})
    with RegistryDouble() as registry:
        registry.publish(
            remote_server(
                "com.example/weather",
                description=HOSTILE,
                title="Weather",
                remotes=[
                    {
                        "type": "streamable-http",
                        "url": "https://{city}.weather.example.com/mcp",
                        "variables": {"city": {"description": "Your city", "isRequired": True}},
                        "headers": [{"name": "X-Api-Key", "isSecret": True, "isRequired": True}],
                    }
                ],
            )
        )
        registry.publish(remote_server("com.example/calendar", description="Calendars", version="2.1.0"))
        registry.publish(
            package_server(
                "com.example/files",
                {"registryType": "npm", "identifier": "files-mcp", "version": "2.0.0", "transport": {"type": "stdio"}},
            )
        )
        registry.publish(remote_server("com.example/retired"), status="deprecated")
        settings = make_settings(tmp, registry_urls=[registry.base_url])
        services = build_services(settings, environ={})
        server = LiveServer(create_app(settings, services=services), free_port())
        server.start()
        try:
            yield server, registry, services
        finally:
            server.stop()


def test_a_user_browses_searches_and_sees_a_stale_registry_said(browser, registry_site, watch):
    server, registry, services = registry_site
    context = browser.new_context(viewport={"width": 1280, "height": 800})
    try:
        page = context.new_page()
        page.on("pageerror", lambda exc: watch.errors.append(str(exc)))
        page.goto(server.url + "/")
        page.get_by_role("button", name="Browse servers").click()
        dialog = page.get_by_role("dialog", name="Browse servers")
        entries = dialog.locator(".registry-entry")
        expect(entries).to_have_count(2)  # the package (administrators only) and the deprecated entry are not offered
        weather = dialog.locator('.registry-entry[data-name="com.example/weather"]')
        expect(weather.locator(".registry-name")).to_have_text("Weather (com.example/weather)")
        expect(weather.locator(".registry-description")).to_have_text(HOSTILE)  # as text
        assert dialog.locator("img").count() == 0 and page.evaluate("window.__pwned") is None
        expect(weather.locator(".registry-meta")).to_have_text("v1.0.0 · streamable HTTP")
        expect(weather.locator('[data-need="city"]')).to_have_text("city (URL, required)")
        expect(weather.locator('[data-need="X-Api-Key"]')).to_have_text(
            "X-Api-Key (header X-Api-Key, secret, required)"
        )
        calendar = dialog.locator('.registry-entry[data-name="com.example/calendar"]')
        expect(calendar.locator(".registry-needs")).to_have_text("Needs nothing to connect.")

        dialog.get_by_role("searchbox", name="Search servers").fill("calendar")
        expect(entries).to_have_count(1)
        expect(entries.first).to_have_attribute("data-name", "com.example/calendar")
        assert any(q.get("search") == "calendar" for _, q in registry.requests)

        registry.down = True
        services.registries.refresh_s = services.registries.retry_s = 0  # ask again at once
        dialog.get_by_role("searchbox", name="Search servers").fill("")  # asked before: its answer is kept
        stale = dialog.locator(".registry-stale")
        expect(stale).to_contain_text("is not answering (registry")
        expect(stale).to_contain_text("HTTP 503); showing its answer from")
        expect(entries).to_have_count(2)  # the last answer, still shown

        dialog.get_by_role("button", name="Close").click()
        expect(page.locator(".registry-dialog")).to_have_count(0)
        assert watch.errors == []
    finally:
        registry.down = False
        context.close()
