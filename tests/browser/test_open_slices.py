"""Opening a long conversation (frontend/static/thread.js, slices.js): the newest messages are drawn
at once and the rest of the page above them in slices, the page free in between. The slices wait
on the page's scheduler (`scheduler.yield`), which these tests hold shut until they let it go, so
"while the older messages are still going in" is a state the test sets, not a race."""

from __future__ import annotations

import asyncio
import re
from concurrent.futures import ThreadPoolExecutor

import pytest
from playwright.sync_api import Page, expect

from switchboard.store import open_store
from switchboard.store.message_data import AssistantData, ToolData
from tests.browser.conftest import ready_app
from tests.browser.helpers import send, wait_finished
from tests.support.harness import double_model, free_port, make_settings, write_config
from tests.support.llm_double import TextReply

pytestmark = pytest.mark.timeout(180)
OWNER = "dev@localhost"
SIZES = {"slices-a": 260, "slices-b": 200}  # messages: A is longer than a page (200), B is one page
PAGE = 200
OLD = 101  # an answer of A's page that goes in with the slices: a tool call, and a question with two versions
# The page's scheduler, shut: each slice waits until the test lets it go (`__slices.release()`).
GATE = """
window.__slices = {shut: true, waiting: [], release() { this.shut = false; this.waiting.splice(0).forEach((go) => go()); }};
scheduler.yield = () => new Promise((go) => (__slices.shut ? __slices.waiting.push(go) : go()));
"""


def text_of(cid: str, i: int) -> str:
    tag = cid[-1].upper()
    return f"{tag}-question {i}" if i % 2 == 0 else f"{tag}-answer {i}"


async def _seed(url: str) -> None:
    store = await open_store(url)
    try:
        for cid, count in SIZES.items():
            await store.create_conversation(id=cid, owner=OWNER, title=cid, model=None, compliance_level=None)
            parent = None
            for i in range(count):
                role = "user" if i % 2 == 0 else "assistant"
                data: AssistantData | None = {"finish_reason": "stop"} if role == "assistant" else None
                if cid == "slices-a" and i == OLD - 1:  # an earlier version of this question
                    await store.add_message(cid, id=f"{cid}-alt", parent_id=parent, role=role, content="first version")
                if cid == "slices-a" and i == OLD:  # a call the answer made, that never finished
                    data = {
                        "finish_reason": "stop",
                        "tool_calls": [{"id": "call-old", "name": "echo", "arguments": "{}"}],
                    }
                message = await store.add_message(
                    cid, id=f"{cid}-m{i:04d}", parent_id=parent, role=role, content=text_of(cid, i), data=data
                )
                parent = message.id
        await _seed_apps(store)
    finally:
        await store.close()


async def _seed_apps(store) -> None:
    """`slices-c`: 30 questions, the first and the last answered with an MCP App's tool call."""
    cid = "slices-c"
    await store.create_conversation(id=cid, owner=OWNER, title=cid, model=None, compliance_level=None)
    parent = None
    for i in range(30):
        steps: list[tuple[str, str, AssistantData | ToolData | None]] = [("user", f"C-question {i}", None)]
        if i in (0, 29):
            call = f"app-{i}"
            steps += [
                ("assistant", "", {"tool_calls": [{"id": call, "name": "viz_chart", "arguments": "{}"}]}),
                (
                    "tool",
                    "a chart",
                    {
                        "call_id": call,
                        "tool": "viz_chart",
                        "server": "viz",
                        "ok": True,
                        "app": {"resource_uri": "ui://viz/chart.html"},
                    },
                ),
            ]
        steps.append(("assistant", f"C-answer {i}", {"finish_reason": "stop"}))
        for n, (role, content, data) in enumerate(steps):
            message = await store.add_message(
                cid, id=f"{cid}-{i:02d}-{n}", parent_id=parent, role=role, content=content, data=data
            )
            parent = message.id


@pytest.fixture(scope="module")
def site(tmp_path_factory, llm):
    tmp = tmp_path_factory.mktemp("open-slices")
    write_config(
        tmp / "defaults", servers={}, models=[double_model(llm)], default_model="double", groups={OWNER: ["users"]}
    )
    port = free_port()
    settings = make_settings(tmp, port=port)
    with ThreadPoolExecutor(1) as pool:  # (Playwright's loop runs on this thread)
        pool.submit(asyncio.run, _seed(settings.database_url_resolved)).result()
    with ready_app(settings, {"DOUBLE_KEY": "x"}, port) as server:
        yield server


@pytest.fixture
def gated(desktop, site, watch):
    """A page whose slices wait for the test, on `site` (not yet opened on a conversation)."""
    page = desktop.new_page()
    page.add_init_script(GATE)
    page.on("pageerror", lambda exc: watch.errors.append(f"{exc}\n{exc.stack}"))
    yield page
    page.close()
    assert watch.errors == [], f"script errors on the page: {watch.errors}"


def open_shut(page: Page, url: str, cid: str) -> None:
    """Open `cid` from its link: its newest answer shows while the older messages wait."""
    page.goto(f"{url}/?c={cid}")
    newest = page.locator(".msg.assistant", has_text=text_of(cid, SIZES[cid] - 1))
    expect(newest).to_be_in_viewport()
    expect(page.locator("#messages")).to_have_attribute("aria-busy", "true")  # older ones still to come
    assert page.locator(".msg").count() < PAGE


def drawn_texts(page: Page) -> list[str]:
    return page.locator(".msg").evaluate_all(
        "nodes => nodes.map(n => (n.querySelector('.bubble, .markdown') || n).innerText.trim())"
    )


def release(page: Page) -> None:
    page.evaluate("__slices.release()")
    expect(page.locator("#messages")).not_to_have_attribute("aria-busy", "true")


def at_bottom(page: Page) -> bool:
    return page.locator("#messages").evaluate("b => b.scrollHeight - b.scrollTop - b.clientHeight < 2")


def test_the_newest_messages_show_first_then_every_message_of_the_page_in_order(gated, site):
    open_shut(gated, site.url, "slices-a")
    release(gated)
    count = SIZES["slices-a"]
    assert drawn_texts(gated) == [text_of("slices-a", i) for i in range(count - PAGE, count)]
    # The reader is still at the bottom, the newest answer on screen.
    expect(gated.locator(".msg.assistant").last).to_be_in_viewport()
    assert at_bottom(gated)
    expect(gated.get_by_role("button", name="Newest")).to_be_hidden()
    # Every drawn message got its ids, actions, cards and versions, the oldest as the newest.
    question = gated.locator(f'.msg.user[data-message-id="slices-a-m{OLD - 1:04d}"]')
    expect(question.locator(".branch-pos")).to_have_text("2/2")
    answer = gated.locator(".msg.assistant", has_text=text_of("slices-a", OLD))
    expect(answer.locator('.tool-card[data-call-id="call-old"]')).to_contain_text("Did not finish")
    expect(gated.locator(".msg.user").first).to_have_attribute("data-message-id", f"slices-a-m{count - PAGE:04d}")
    expect(gated.locator(".msg.user .edit-btn").first).to_be_attached()
    assert gated.locator(".msg.user .edit-btn:not([hidden])").count() == PAGE // 2
    # "Show earlier messages" reads and draws the rest, above.
    gated.get_by_role("button", name="Show earlier messages").click()
    expect(gated.locator(".msg")).to_have_count(count)
    expect(gated.locator("#messages")).not_to_have_attribute("aria-busy", "true")
    assert drawn_texts(gated) == [text_of("slices-a", i) for i in range(count)]
    expect(gated.get_by_role("button", name="Show earlier messages")).to_have_count(0)


def test_a_reader_who_scrolled_up_stays_where_they_were(gated, site):
    open_shut(gated, site.url, "slices-b")
    gated.locator("#messages").hover()
    gated.mouse.wheel(0, -300)  # the reader scrolls up a little
    gated.wait_for_function(
        "(b) => b.scrollHeight - b.scrollTop - b.clientHeight > 200", arg=gated.locator("#messages").element_handle()
    )
    gated.wait_for_timeout(200)  # (a smooth scroll's end)
    reading = gated.locator(".msg", has_text=text_of("slices-b", 195))
    at = reading.bounding_box()["y"]
    release(gated)
    assert gated.locator(".msg").count() == PAGE
    assert abs(reading.bounding_box()["y"] - at) < 2  # the same message, at the same place on screen
    assert not at_bottom(gated)
    expect(gated.get_by_role("button", name="Newest")).to_be_visible()


def test_opening_another_conversation_stops_drawing_the_first(gated, site):
    open_shut(gated, site.url, "slices-a")
    gated.locator('.conv[data-id="slices-b"] .conv-link').click()
    expect(gated.locator(".msg.assistant", has_text=text_of("slices-b", SIZES["slices-b"] - 1))).to_be_in_viewport()
    release(gated)  # what was left of A's slices may run now: they must not draw
    gated.wait_for_timeout(200)
    expect(gated.locator(".msg", has_text=re.compile("A-(question|answer)"))).to_have_count(0)
    assert drawn_texts(gated) == [text_of("slices-b", i) for i in range(SIZES["slices-b"])]


def test_a_message_sent_while_the_older_ones_go_in_lands_at_the_end(gated, site, llm):
    open_shut(gated, site.url, "slices-b")
    gated.get_by_role("status").filter(has_text="Connected").wait_for()
    llm.enqueue(TextReply("the fresh answer"))
    send(gated, "a fresh question")
    expect(wait_finished(gated)).to_contain_text("the fresh answer")
    expect(gated.locator("#messages")).to_have_attribute("aria-busy", "true")  # sent before the older ones went in
    release(gated)
    texts = drawn_texts(gated)
    assert texts[-2:] == ["a fresh question", "the fresh answer"]
    assert texts[:-2] == [text_of("slices-b", i) for i in range(SIZES["slices-b"])]
    expect(gated.locator(".msg.assistant").last).to_be_in_viewport()
    assert at_bottom(gated)
    # The new turn was matched to the stored one while the older messages were still going in.
    expect(gated.locator(".msg.assistant").last).to_have_attribute("data-message-id", re.compile(".+"))
    expect(gated.locator(".msg.assistant").last.get_by_role("button", name="Regenerate answer")).to_be_visible()


def test_the_app_shown_is_the_newest_answers_not_one_drawn_after_it(gated, site):
    """The newest stored app opens in the canvas; an older one that goes in with the slices gets its
    tab back, but does not take the canvas over."""
    gated.goto(f"{site.url}/?c=slices-c")
    expect(gated.locator(".msg.assistant", has_text="C-answer 29")).to_be_in_viewport()
    newest = gated.locator("#tab-app-app-29")
    expect(newest).to_have_attribute("aria-selected", "true")
    release(gated)
    expect(gated.locator("#tab-app-app-0")).to_be_attached()
    gated.wait_for_timeout(200)
    expect(newest).to_have_attribute("aria-selected", "true")
