"""The model picker as a person meets a keyless local model that is down: the model is marked
with why, the page says that its configured default is not the one in use, and after Reload
configuration changes `default_model`, an open page's New chat starts on the new default."""

from __future__ import annotations

import time

import httpx
import pytest
from playwright.sync_api import expect

from switchboard.services import build_services
from switchboard.web.app import create_app
from tests.browser.conftest import LiveServer
from tests.support.harness import free_port, make_settings, write_config


@pytest.fixture(scope="module")
def down_site(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("model-picker")
    down = f"http://127.0.0.1:{free_port()}/v1"  # bound and closed: nothing listens there
    write_config(
        tmp / "defaults",
        models=[
            {"name": "demo", "model": "switchboard/demo"},
            {"name": "local", "model": "openai/llama3.1", "api_base": down},
            {"name": "spare", "model": "switchboard/demo"},
        ],
        default_model="local",
        groups={"dev@localhost": ["users", "admin"]},
    )
    (tmp / "overrides").mkdir()
    settings = make_settings(tmp)
    server = LiveServer(create_app(settings, services=build_services(settings, environ={})), free_port())
    server.start()
    try:
        deadline = time.monotonic() + 30
        while httpx.get(f"{server.url}/api/config", timeout=5).json()["default_model"] != "demo":  # the probe has run
            assert time.monotonic() < deadline, "the start-up probe never marked the local model"
            time.sleep(0.1)
        yield server, tmp / "overrides" / "llmconfig.yml", down
    finally:
        server.stop()


def test_a_down_default_is_marked_said_and_a_reloaded_default_reaches_new_chat(browser, down_site, watch):
    server, overrides, down = down_site
    context = browser.new_context(viewport={"width": 1400, "height": 800})
    try:
        page = context.new_page()
        page.on("pageerror", lambda exc: watch.errors.append(str(exc)))
        page.goto(server.url + "/")
        picker = page.locator("#model")
        expect(picker).to_have_value("demo")
        local = picker.locator('option[value="local"]')
        expect(local).to_have_text(f"local — not working: nothing answers at {down} (connection refused)")
        expect(local).to_have_attribute("data-failing", "true")
        note = page.locator("#model-note")
        expect(note).to_contain_text("default not working")
        expect(note).to_contain_text(f"The default model 'local' is not working (nothing answers at {down}")
        expect(note).to_contain_text("'demo' is used until it works")

        overrides.write_text("default_model: spare\n")
        page.get_by_role("button", name="Reload configuration").click()
        expect(page.locator(".reload-result")).to_have_attribute("data-kind", "done")
        page.locator("#sidebar-new-chat").click()
        expect(picker).to_have_value("spare")
        expect(note).not_to_contain_text("default not working")
        assert watch.errors == []
    finally:
        overrides.unlink(missing_ok=True)
        context.close()
