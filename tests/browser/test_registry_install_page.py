"""The Browse dialog's Install and the Your servers dialog's Ask to share, in Chromium: a user
installs a registry entry's remote (a real toolbox on 127.0.0.1) by filling the fields it needs,
the secret one as a password field; then asks to share it and sees that it waits; and in the
console (the same user is an administrator here) the request is approved for a group."""

from __future__ import annotations

from urllib.parse import urlsplit

import pytest
from playwright.sync_api import expect

from switchboard.services import build_services
from switchboard.web.app import create_app
from tests.browser.conftest import LiveServer
from tests.support.harness import free_port, make_settings, run_toolbox_server, write_config
from tests.support.registry_double import RegistryDouble, remote_server

TOKEN = "page-install-secret-1234"


@pytest.fixture(scope="module")
def install_site(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("registry-install")
    write_config(tmp / "defaults", groups={"dev@localhost": ["users", "admin"]})
    with RegistryDouble() as registry, run_toolbox_server("http") as url:
        registry.publish(
            remote_server(
                "com.example/toolbox",
                description="The toolbox",
                remotes=[
                    {
                        "type": "streamable-http",
                        "url": "http://127.0.0.1:{port}/mcp",
                        "variables": {"port": {"description": "Its port", "isRequired": True}},
                        "headers": [{"name": "X-Token", "isSecret": True, "isRequired": True}],
                    }
                ],
            )
        )
        settings = make_settings(tmp, registry_urls=[registry.base_url], user_server_hosts=["127.0.0.1"])
        services = build_services(settings, environ={})
        server = LiveServer(create_app(settings, services=services), free_port())
        server.start()
        try:
            yield server, services, str(urlsplit(url).port)
        finally:
            server.stop()


def test_a_user_installs_from_the_browse_dialog_asks_to_share_and_the_console_approves(browser, install_site, watch):
    server, services, port = install_site
    context = browser.new_context(viewport={"width": 1280, "height": 900})
    try:
        page = context.new_page()
        page.on("pageerror", lambda exc: watch.errors.append(str(exc)))
        page.goto(server.url + "/")
        page.get_by_role("button", name="Browse servers").click()
        dialog = page.get_by_role("dialog", name="Browse servers")
        dialog.get_by_role("button", name="Install com.example/toolbox").click()
        form = dialog.get_by_role("form", name="Install com.example/toolbox")
        form.locator('[data-variable="port"]').fill(port)
        secret = form.locator('[data-variable="X-Token"]')
        expect(secret).to_have_attribute("type", "password")
        secret.fill(TOKEN)
        form.get_by_role("button", name="Install for me").click()
        expect(form.locator(".registry-install-message")).to_contain_text("Installed toolbox", timeout=60_000)
        owned = [name for name, source in services.pool.mcp.sources.items() if source == "user:dev@localhost"]
        assert len(owned) == 1 and services.pool.server_config(owned[0]).headers == {"X-Token": TOKEN}
        assert services.pool.mcp.trust[owned[0]] == "review"
        dialog.get_by_role("button", name="Close").click()

        page.get_by_role("button", name="Add server").click()
        mine = page.locator('.user-server[data-server="toolbox"]')
        expect(mine.locator("h3")).to_contain_text("ready")  # (the list is drawn again while a server starts)
        mine.get_by_role("button", name="Ask to share").click()
        share = mine.get_by_role("form", name="Share toolbox")
        expect(share).to_contain_text("its headers (your keys, if any) move with it")
        share.get_by_role("textbox").fill("for the team")
        share.get_by_role("button", name="Send request").click()
        expect(mine.locator(".share-state")).to_have_text("Waiting for an administrator to share it.", timeout=30_000)

        page.goto(server.url + "/admin")
        request = page.locator(f'.share-request[data-server="{owned[0]}"]')
        expect(request).to_contain_text("dev@localhost")
        expect(request).to_contain_text("X-Token")
        assert TOKEN not in page.content()
        request.get_by_role("textbox", name=f"Groups for {owned[0]}").fill("users")
        request.get_by_role("button", name=f"Approve sharing {owned[0]}").click()
        expect(page.locator(".admin-ok")).to_have_text(f"Shared {owned[0]}.")
        expect(page.locator(f'.server-card[data-name="{owned[0]}"] .badge')).to_have_text("admin")
        assert services.pool.server_config(owned[0]).groups == ["users"]
        assert watch.errors == []
    finally:
        context.close()
