"""A tool no administrator approved shows greyed in the tools panel, "waiting for an
administrator", without a checkbox the user can tick; once approved (through the API, as the
console does) the open page offers it without a reload."""

from __future__ import annotations

import httpx
import pytest
from playwright.sync_api import expect

from tests.browser.conftest import ready_app
from tests.support.harness import make_settings, toolbox_entry, write_config

pytestmark = pytest.mark.timeout(240)  # two apps and a browser start: slow on a loaded machine


@pytest.fixture
def review_app(tmp_path):
    write_config(
        tmp_path / "defaults",
        servers={"vetted": toolbox_entry(trust="review", approval="never")},
        groups={"dev@localhost": ["users", "admin"]},
    )
    with ready_app(make_settings(tmp_path)) as server:
        yield server


def test_a_waiting_tool_is_greyed_and_offered_once_approved(open_page, review_app):
    page = open_page(url=review_app.url)
    vetted = page.locator('details.server[data-server="vetted"]')
    waiting = vetted.locator('li.tool-waiting[data-tool="vetted_echo"]')
    expect(waiting).to_contain_text("waiting for an administrator")
    expect(waiting.locator("input")).to_be_disabled()
    expect(vetted.locator('input[data-tool="vetted_echo"]')).to_have_count(0)
    assert float(waiting.evaluate("li => getComputedStyle(li).opacity")) < 1  # greyed

    listed = httpx.get(f"{review_app.url}/api/admin/tools?state=pending").json()["tools"]
    echo = next(t for t in listed if t["name"] == "vetted_echo")
    answer = httpx.post(f"{review_app.url}/api/admin/tools/vetted_echo/approve", json={"pin": echo["pin"]})
    assert answer.status_code == 200, answer.text

    expect(vetted.locator('input[data-tool="vetted_echo"]')).to_have_count(1)  # no reload: catalogue_changed
    expect(vetted.locator('li.tool-waiting[data-tool="vetted_echo"]')).to_have_count(0)
