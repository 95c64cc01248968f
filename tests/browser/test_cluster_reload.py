"""Real Chromium through nginx in front of three app processes (round robin, no stickiness):
a turn waits for an approval, the page reloads and its new websocket lands on another process,
which replays the turn's events; the approval is answered from the new page and the turn
finishes there. An incognito chat goes on when the process its page was talking to restarts."""

from __future__ import annotations

import signal
import time

import httpx
import pytest
from playwright.sync_api import expect

from tests.browser.helpers import card, last_answer, send, sent_messages, wait_finished
from tests.support.cluster import running_cluster
from tests.support.harness import toolbox_entry, write_config

pytestmark = [pytest.mark.timeout(600)]
ATTEMPTS = 3
METRICS_TOKEN = "browser-cluster-metrics-token"


@pytest.fixture(scope="module")
def cluster(tmp_path_factory, postgres_cluster):
    folder = tmp_path_factory.mktemp("browser-cluster")
    write_config(
        folder / "defaults",
        servers={"toolbox": toolbox_entry(description="Test tools")},
        models=[{"name": "demo", "model": "switchboard/demo"}],
        default_model="demo",
    )
    with running_cluster(
        folder, postgres_cluster.create_database(), replicas=3, extra_env={"SWITCHBOARD_METRICS_TOKEN": METRICS_TOKEN}
    ) as running:
        for index in range(3):
            _warm_up(running, index)
        yield running


def _warm_up(cluster, index: int) -> None:
    """The model library's first call on a process is slow: make it before a page waits on it."""
    with httpx.stream(
        "POST", f"http://127.0.0.1:{cluster.ports[index]}/api/chat", json={"content": "warm up"}, timeout=120
    ) as response:
        response.read()


def _restart(cluster, index: int) -> None:
    cluster.start_app(index)
    _warm_up(cluster, index)


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
        expect(card(page, "toolbox_delete_everything").locator("form.approval")).to_be_visible(timeout=30_000)

        # A page load makes the same number of requests each time, so round robin would put the
        # reloaded page's websocket on the same process; other users' requests in between move it.
        for _ in range(attempt + 1):
            httpx.get(f"{cluster.base}/healthz", timeout=30)
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
        deadline = time.monotonic() + 10
        while len(_websocket_upstreams(cluster)) < before + 2 and time.monotonic() < deadline:
            time.sleep(0.1)
        first, second = _websocket_upstreams(cluster)[before : before + 2]
        if first != second:
            crossed += 1
            break
    assert errors == [], errors
    assert crossed, f"in {ATTEMPTS} reloads the new page never landed on another process"


def _open_sessions(cluster, index: int) -> float:
    text = httpx.get(
        f"http://127.0.0.1:{cluster.ports[index]}/metrics",
        timeout=30,
        headers={"Authorization": f"Bearer {METRICS_TOKEN}"},
    ).text
    return sum(
        float(line.rsplit(" ", 1)[1]) for line in text.splitlines() if line.startswith("switchboard_open_sessions")
    )


def test_an_incognito_chat_goes_on_when_the_process_its_page_talks_to_restarts(browser, cluster):
    context = browser.new_context(viewport={"width": 1280, "height": 800})
    page = context.new_page()
    page.set_default_timeout(20_000)
    errors: list[str] = []
    frames: list[str] = []
    page.on("pageerror", lambda exc: errors.append(str(exc)))
    page.on("websocket", lambda ws: ws.on("framesent", lambda payload: frames.append(payload)))
    page.goto(cluster.base + "/")
    page.get_by_role("status").filter(has_text="Connected").wait_for()
    page.get_by_role("switch", name="Incognito").check()
    marker = "incognito browser marker"
    send(page, f'toolbox_echo {{"text": "{marker}"}}')
    expect(wait_finished(page)).to_contain_text(marker)

    holder = next(i for i in range(3) if _open_sessions(cluster, i) >= 1)  # the process the page's socket is on
    cluster.stop_app(holder)  # SIGTERM: the page, with no answer running, is sent elsewhere at once
    expect(page.locator(".notice").filter(has_text="Reconnected.")).to_be_visible()
    expect(page.locator("#conn")).to_have_attribute("data-state", "connected")
    try:
        # Answering the question again needs the history: the new process has it from the page only.
        last_answer(page).get_by_role("button", name="Regenerate answer").click()
        expect(wait_finished(page)).to_contain_text(marker)
        expect(page.locator(".msg.assistant .alert")).to_have_count(0)
        regenerate = sent_messages(frames, "chat")[-1]
        assert regenerate["regenerate"] is True and regenerate["incognito_state"]
        for index in range(3):
            if index != holder:
                found = httpx.get(f"http://127.0.0.1:{cluster.ports[index]}/api/conversations", params={"q": marker})
                assert found.json()["conversations"] == []  # nothing of it was stored
    finally:
        context.close()
        _restart(cluster, holder)
    assert errors == [], errors


def test_a_message_sent_as_its_process_dies_unread_is_sent_again_to_another(browser, cluster):
    """The page's process is frozen, the user sends, the process is killed before it read the
    message: the page reconnects through nginx, finds the message is not in the store, and sends
    it again; another process answers it, and it is stored once."""
    context = browser.new_context(viewport={"width": 1280, "height": 800})
    page = context.new_page()
    page.set_default_timeout(20_000)
    errors: list[str] = []
    page.on("pageerror", lambda exc: errors.append(str(exc)))
    page.goto(cluster.base + "/")
    page.get_by_role("status").filter(has_text="Connected").wait_for()
    send(page, 'toolbox_echo {"text": "before the freeze"}')
    expect(wait_finished(page)).to_contain_text("before the freeze")
    conversation = page.evaluate("new URL(location.href).searchParams.get('c')")
    holder = next(i for i in range(3) if _open_sessions(cluster, i) >= 1)
    process = cluster.procs[holder]
    process.send_signal(signal.SIGSTOP)  # it reads nothing from here on
    try:
        send(page, 'toolbox_echo {"text": "sent into the void"}')
        page.wait_for_timeout(500)
    finally:
        cluster.stop_app(holder, kill=True)
    try:
        expect(page.locator(".notice").filter(has_text="did not reach the server")).to_be_visible(timeout=30_000)
        expect(wait_finished(page)).to_contain_text("sent into the void")
        stored = httpx.get(f"{cluster.base}/api/conversations/{conversation}", timeout=30).json()["messages"]
        users = [m["content"] for m in stored if m["role"] == "user"]
        assert users == ['toolbox_echo {"text": "before the freeze"}', 'toolbox_echo {"text": "sent into the void"}']
    finally:
        context.close()
        _restart(cluster, holder)
    assert errors == [], errors
