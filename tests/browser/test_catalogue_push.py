"""The tools panel follows a server whose tool list changes while the page is open
(`catalogue_changed` on the websocket), without a reload."""

from __future__ import annotations

import sys

import pytest
from playwright.sync_api import expect

from tests.browser.conftest import ready_app
from tests.browser.helpers import send, wait_finished
from tests.support.harness import PROJECT_ROOT, make_settings, write_config

GROWING = PROJECT_ROOT / "tests" / "support" / "servers" / "growing.py"


@pytest.fixture
def growing_app(tmp_path):
    write_config(
        tmp_path / "defaults",
        servers={
            "live": {"command": sys.executable, "args": [str(GROWING)], "approval": "never", "description": "Grows"}
        },
        groups={"dev@localhost": ["users"]},
    )
    with ready_app(make_settings(tmp_path)) as server:
        yield server


def test_the_tools_panel_shows_a_tool_the_server_added_while_the_page_was_open(open_page, growing_app):
    watching = open_page(url=growing_app.url)
    acting = open_page(url=growing_app.url)
    live = watching.locator('details.server[data-server="live"]')
    expect(live.locator('input[data-tool="live_grow"]')).to_have_count(1)
    expect(live.locator('input[data-tool="live_count_words"]')).to_have_count(0)

    send(acting, "run live_grow")  # the demo model calls the tool; the server adds count_words
    wait_finished(acting)

    expect(live.locator('input[data-tool="live_count_words"]')).to_have_count(1)
    expect(acting.locator('details.server[data-server="live"] input[data-tool="live_count_words"]')).to_have_count(1)


@pytest.fixture
def staff_app(tmp_path):
    servers = {"staff": {"command": sys.executable, "args": [str(GROWING)], "approval": "never", "groups": ["staff"]}}
    write_config(tmp_path / "overrides", servers=servers, groups={"dev@localhost": ["users", "staff", "admin"]})
    with ready_app(make_settings(tmp_path)) as server:
        yield server, tmp_path / "overrides" / "groups.yml"


def test_an_open_page_drops_a_groups_tools_when_a_reload_takes_the_user_out_of_it(open_page, staff_app):
    """The socket stays open: the page gets a refreshed `session`, lists the tools again, and does
    not take it for a reconnect (no reload of the conversation, no "Reconnected.")."""
    import httpx
    import yaml

    app, groups_file = staff_app
    page = open_page(url=app.url)
    staff = page.locator('details.server[data-server="staff"]')
    expect(staff.locator('input[data-tool="staff_grow"]')).to_have_count(1)
    send(page, "hello")  # a stored conversation: a reconnect would reload it and say so
    wait_finished(page)

    groups_file.write_text(yaml.safe_dump({"users": {"dev@localhost": ["users", "admin"]}, "admin_group": "admin"}))
    assert httpx.post(f"{app.url}/api/admin/reload").status_code == 200

    # an administrator still sees the server (its status), no longer its tools
    expect(staff.locator('input[data-tool="staff_grow"]')).to_have_count(0)
    page.wait_for_timeout(500)
    expect(page.get_by_text("Reconnected.")).to_have_count(0)
    expect(page.locator(".msg.assistant")).to_have_count(1)
