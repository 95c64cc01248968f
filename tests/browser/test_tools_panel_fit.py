"""The tools panel at a laptop's width: server names stay whole, a failed server's stderr path
stays inside the panel, and tools only a server's app may call are listed apart (no checkbox,
not counted), since the model never gets them."""

from __future__ import annotations

import time

import httpx
import pytest
from playwright.sync_api import expect

from switchboard.services import build_services
from switchboard.web.app import create_app
from tests.browser.conftest import LiveServer
from tests.support.harness import free_port, make_settings, toolbox_entry, write_config

# lines of text an element's own words take, and whether it is wider than its box
LINES = """el => { const r = document.createRange(); r.selectNodeContents(el);
  return new Set([...r.getClientRects()].map(b => Math.round(b.top))).size; }"""


@pytest.fixture(scope="module")
def site(tmp_path_factory):
    """An administrator's page (who sees a failed server's stderr) with the dataviz server and a
    server that fails to start, under a long data path as a real install has."""
    tmp = tmp_path_factory.mktemp("a-rather-long-install-folder-name-for-the-tools-panel")
    write_config(
        tmp / "defaults",
        servers={
            "dataviz": {
                "command": "python",
                "args": ["main.py"],
                "cwd": "backend/mcp/dataviz",
                "compliance_level": "Internal",
            },
            "pdfbasic": {"command": "python", "args": ["-c", "import sys; sys.exit('cannot start: no licence')"]},
            "toolbox": toolbox_entry(),
        },
        groups={"dev@localhost": ["users", "admin"]},
    )
    settings = make_settings(tmp)
    server = LiveServer(
        create_app(settings, services=build_services(settings, environ={"PATH": "/usr/bin:/bin"})), free_port()
    )
    server.start()
    try:
        deadline = time.monotonic() + 60
        while httpx.get(f"{server.url}/readyz", timeout=5).json()["counts"]["starting"] and time.monotonic() < deadline:
            time.sleep(0.1)
        yield server
    finally:
        server.stop()


def test_names_stay_whole_the_stderr_path_fits_and_app_only_tools_are_apart(browser, site, watch):
    context = browser.new_context(viewport={"width": 1400, "height": 900})
    page = context.new_page()
    page.on("pageerror", lambda exc: watch.errors.append(str(exc)))
    page.goto(site.url + "/")
    panel = page.locator("#tools-panel")
    if not panel.is_visible():
        page.get_by_role("button", name="Tools").click()
    expect(panel).to_be_visible()
    dataviz = page.locator('details.server[data-server="dataviz"]')
    expect(dataviz).to_have_attribute("data-status", "ready", timeout=30_000)
    expect(page.locator('details.server[data-server="pdfbasic"]')).to_have_attribute("data-status", "failed")

    for name in page.locator(".server-name").all():
        assert name.evaluate(LINES) == 1, name.text_content()  # "pdfbas/ic" was two lines
        assert name.evaluate("el => el.scrollWidth <= el.clientWidth"), name.text_content()  # whole, not cut

    broken = page.locator('details.server[data-server="pdfbasic"]')
    broken.evaluate("d => d.open = true")
    stderr = broken.locator("details.server-stderr")
    expect(stderr.locator("summary")).to_contain_text("pdfbasic.stderr.log")
    stderr.evaluate("d => d.open = true")
    sizes = panel.evaluate("p => [p.scrollWidth, p.clientWidth]")
    assert sizes[0] <= sizes[1], f"the panel scrolls sideways: {sizes}"
    summary = stderr.locator("summary")
    assert summary.evaluate("s => s.scrollWidth <= s.clientWidth"), summary.text_content()

    # chart_series (visibility ["app"]): listed for the app, without a checkbox, and not counted.
    expect(dataviz.locator('input[data-tool="dataviz_chart_series"]')).to_have_count(0)
    expect(dataviz.locator(".app-tool")).to_have_count(1)
    model_tools = dataviz.locator("input[data-tool]").count()
    expect(dataviz.locator(".tool-count")).to_have_text(f"{model_tools} tools")
    offered = page.locator("input[data-tool]").count()
    expect(page.locator("#tools-summary")).to_contain_text(f"{offered} of {offered} tools")
    context.close()
    assert watch.errors == []
