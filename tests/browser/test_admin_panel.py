"""The tools panel for an administrator: config errors on top, and Restart next to a failed server."""

from __future__ import annotations

import time

import httpx
import pytest
from playwright.sync_api import expect

from switchboard.services import build_services
from switchboard.web.app import create_app
from tests.browser.conftest import LiveServer
from tests.support.harness import TOOLBOX, free_port, make_settings, toolbox_entry, write_config


@pytest.fixture(scope="module")
def admin_site(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("admin-panel")
    licence = tmp / "licence"
    wrapper = tmp / "licensed.py"
    wrapper.write_text(
        "import os, runpy, sys\n"
        f"if not os.path.exists({str(licence)!r}):\n    sys.exit('cannot start: no licence')\n"
        f"runpy.run_path({str(TOOLBOX)!r}, run_name='__main__')\n"
    )
    write_config(
        tmp / "defaults",
        servers={"licensed": {"command": "python", "args": [str(wrapper)]}, "toolbox": toolbox_entry()},
        groups={"dev@localhost": ["users", "admin"]},
    )
    (tmp / "overrides").mkdir()
    (tmp / "overrides" / "llmconfig.yml").write_text("models:\n  - name: x\n   model: y\n")
    settings = make_settings(tmp)
    server = LiveServer(create_app(settings, services=build_services(settings, environ={})), free_port())
    server.start()
    try:
        deadline = time.monotonic() + 60
        while httpx.get(f"{server.url}/readyz", timeout=5).json()["counts"]["starting"] and time.monotonic() < deadline:
            time.sleep(0.1)
        yield server, licence
    finally:
        server.stop()


def test_an_admin_sees_why_a_server_exited_with_its_stderr(browser, admin_site, watch):
    server, _ = admin_site
    context = browser.new_context(viewport={"width": 1280, "height": 800})
    try:
        page = context.new_page()
        page.on("pageerror", lambda exc: watch.errors.append(str(exc)))
        page.goto(server.url + "/")
        licensed = page.locator('details.server[data-server="licensed"]')
        expect(licensed.locator(".server-reason")).to_contain_text("the server process exited with code 1")
        expect(licensed.locator(".server-reason")).to_contain_text("licensed.stderr.log")
        stderr = licensed.locator(".server-stderr")
        stderr.locator("summary").click()
        expect(stderr.locator("pre")).to_have_text("cannot start: no licence")
    finally:
        context.close()


def test_an_admin_sees_config_errors_and_restarts_a_failed_server(browser, admin_site, watch):
    server, licence = admin_site
    context = browser.new_context(viewport={"width": 1280, "height": 800})
    try:
        page = context.new_page()
        page.on("pageerror", lambda exc: watch.errors.append(str(exc)))
        page.goto(server.url + "/")
        errors = page.locator(".config-errors")
        expect(errors).to_contain_text("llmconfig.yml")
        expect(errors).to_contain_text("line 3, column 4")
        licensed = page.locator('details.server[data-server="licensed"]')
        expect(licensed).to_have_attribute("data-status", "failed")
        expect(page.locator('details.server[data-server="toolbox"] .server-restart')).to_have_count(0)
        licence.write_text("ok")
        licensed.locator(".server-restart").click()
        expect(licensed).to_have_attribute("data-status", "ready", timeout=30_000)
        expect(licensed.locator(".server-restart")).to_have_count(0)
        expect(licensed.locator(".tool-item").first).to_be_visible()
        assert watch.errors == []
    finally:
        context.close()


def test_a_user_who_is_not_an_admin_gets_no_restart_button(page):
    broken = page.locator('details.server[data-server="broken"]')
    expect(broken).to_have_attribute("data-status", "failed")
    expect(broken.locator(".server-reason")).to_be_visible()
    expect(broken.locator(".server-restart")).to_have_count(0)


def test_an_admin_reloads_the_configuration_and_sees_a_refusal_and_why(browser, admin_site, watch):
    server, licence = admin_site
    overrides = licence.parent / "overrides" / "llmconfig.yml"
    broken = overrides.read_text()
    context = browser.new_context(viewport={"width": 1280, "height": 800})
    try:
        page = context.new_page()
        page.on("pageerror", lambda exc: watch.errors.append(str(exc)))
        page.goto(server.url + "/")
        reload = page.get_by_role("button", name="Reload configuration")
        result = page.locator(".reload-result")
        # A file that cannot be read: refused, with the file and what to do.
        reload.click()
        expect(result).to_have_attribute("data-kind", "refused")
        expect(result).to_have_attribute("role", "alert")
        expect(result).to_contain_text("llmconfig.yml")
        expect(result).to_contain_text("the running configuration is unchanged")
        expect(page.locator(".config-errors")).to_be_visible()
        # Fixed: reloaded, the errors go, and the result says what happened to the servers.
        overrides.write_text("default_model: demo\n")
        reload.click()
        expect(result).to_have_attribute("data-kind", "done")
        expect(result).to_contain_text("Reloaded at")
        expect(result).to_contain_text("unchanged")
        expect(page.locator(".config-errors")).to_have_count(0)
        expect(reload).to_be_enabled()
        assert watch.errors == []
    finally:
        overrides.write_text(broken)
        context.close()


def test_the_reload_button_is_for_administrators_only(page):
    expect(page.locator("#servers-status")).to_contain_text("server")
    expect(page.get_by_role("button", name="Reload configuration")).to_have_count(0)
