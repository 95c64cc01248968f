"""Real Chromium through nginx in front of three app processes (round robin, no stickiness):
a turn waits for an approval, the page reloads and its new websocket lands on another process,
which replays the turn's events; the approval is answered from the new page and the turn
finishes there."""

from __future__ import annotations

import pytest
from playwright.sync_api import expect

from tests.browser.helpers import card, send, wait_finished
from tests.support.cluster import running_cluster
from tests.support.harness import toolbox_entry, write_config

pytestmark = [pytest.mark.timeout(600)]
ATTEMPTS = 8  # round robin puts the new websocket on the same process one time in three


@pytest.fixture(scope="module")
def cluster(tmp_path_factory, postgres_cluster):
    folder = tmp_path_factory.mktemp("browser-cluster")
    write_config(folder / "defaults", servers={"toolbox": toolbox_entry(description="Test tools")},
                 models=[{"name": "demo", "model": "switchboard/demo"}], default_model="demo")  # fmt: skip
    with running_cluster(folder, postgres_cluster.create_database(), replicas=3) as running:
        yield running


def _websocket_upstreams(cluster) -> list[str]:
    """The app process of each websocket nginx has passed on, in the order they closed."""
    lines = (cluster.folder / "nginx" / "access.log").read_text().splitlines()
    return [line.rsplit(" ", 1)[-1] for line in lines if line.startswith("GET /ws ")]


def test_a_reload_lands_on_another_process_which_replays_the_turn_and_takes_the_approval(browser, cluster):
    errors: list[str] = []
    crossed = 0
    for attempt in range(ATTEMPTS):
        context = browser.new_context(viewport={"width": 1280, "height": 800})
        page = context.new_page()
        page.set_default_timeout(20_000)
        page.on("pageerror", lambda exc: errors.append(str(exc)))
        before = len(_websocket_upstreams(cluster))
        page.goto(cluster.base + "/")
        page.get_by_role("status").filter(has_text="Connected").wait_for()
        marker = f"attempt {attempt}"
        send(page, f"toolbox_delete_everything {{}} {marker}")
        expect(card(page, "toolbox_delete_everything").locator("form.approval")).to_be_visible()

        page.reload()
        page.get_by_role("status").filter(has_text="Connected").wait_for()
        # The new page has the turn's events so far: the question, the card waiting for an answer.
        expect(page.locator(".msg.user .bubble")).to_have_text([f"toolbox_delete_everything {{}} {marker}"])
        tool = card(page, "toolbox_delete_everything")
        expect(tool).to_have_attribute("data-state", "awaiting")
        tool.get_by_role("button", name="Approve").click()
        expect(tool).to_have_attribute("data-state", "done")
        expect(wait_finished(page)).to_contain_text("deleted (not really)")
        context.close()  # nginx logs each websocket when it closes
        first, second = _websocket_upstreams(cluster)[before:before + 2]
        if first != second:
            crossed += 1
            break
    assert errors == [], errors
    assert crossed, f"in {ATTEMPTS} reloads the new page never landed on another process"
