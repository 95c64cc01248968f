"""Stored conversations in the page: the sidebar (search, rename, delete, export,
incognito), reload and reconnect, branches (edit, regenerate), copy."""

from __future__ import annotations

import json
import re
import uuid
from pathlib import Path
from urllib.parse import parse_qs, urlsplit

import pytest
from playwright.sync_api import Page, expect
from websockets.sync.client import connect as ws_connect

from tests.browser.helpers import card, last_answer, send, sent_messages, wait_finished
from tests.browser.netproxy import TcpProxy
from tests.support.llm_double import ErrorReply, TextReply, ToolCall, ToolCallReply


def word() -> str:
    """A word no other test writes, to find this test's conversation."""
    return f"w{uuid.uuid4().hex[:10]}"


def open_id(page: Page) -> str:
    """The open conversation's id, once the URL carries it."""
    page.wait_for_url(re.compile(r"[?&]c="))
    return parse_qs(urlsplit(page.url).query)["c"][0]


def item(page: Page, conversation_id: str):
    return page.locator(f'.conv[data-id="{conversation_id}"]')


def start(page: Page, llm, text: str, answer: str) -> str:
    """One question and its answer; returns the stored conversation's id."""
    llm.enqueue(TextReply(answer))
    send(page, text)
    expect(wait_finished(page)).to_contain_text(answer)
    return open_id(page)


def menu(page: Page, conversation_id: str, choice: str):
    entry = item(page, conversation_id)
    entry.locator(".conv-menu-btn").click()
    return entry.locator(".conv-menu").get_by_role("button", name=choice)


def test_a_conversation_appears_in_the_sidebar_after_the_first_answer(page, llm, shots):
    marker = word()
    conversation_id = start(page, llm, f"Tell me about {marker}", "Here it is.")
    entry = item(page, conversation_id)
    expect(entry).to_be_visible()
    expect(entry).to_have_attribute("aria-current", "page")
    group = page.locator(".conv-group").filter(has=entry)
    expect(group.locator(".conv-group-title")).to_have_text("Today")
    # Newest first: it heads the list.
    expect(page.locator(".conv").first).to_have_attribute("data-id", conversation_id)
    shots(page, "15-sidebar")


def test_reload_brings_the_conversation_back_and_it_continues(page, llm, watch):
    marker = word()
    llm.enqueue(
        ToolCallReply([ToolCall("toolbox_echo", json.dumps({"text": marker}))]), TextReply("The echo said **it**.")
    )
    send(page, f"echo {marker}")
    wait_finished(page)
    conversation_id = open_id(page)
    page.reload()
    page.get_by_role("status").filter(has_text="Connected").wait_for()
    expect(page.locator(".msg.user .bubble")).to_have_text([f"echo {marker}"])
    answer = last_answer(page)
    expect(answer.locator("strong")).to_have_text("it")
    echo = card(page, "toolbox_echo")
    expect(echo).to_have_attribute("data-state", "done")
    expect(echo.locator(".result-summary")).to_contain_text(marker)
    expect(item(page, conversation_id)).to_have_attribute("aria-current", "page")
    assert sent_messages(watch.sent, "attach")[-1]["conversation_id"] == conversation_id
    # The next question continues it, with its history.
    llm.enqueue(TextReply("Still the same conversation."))
    send(page, "and now?")
    expect(wait_finished(page)).to_contain_text("Still the same conversation.")
    assert sent_messages(watch.sent, "chat")[-1]["conversation_id"] == conversation_id
    assert any(marker in json.dumps(m) for m in llm.requests[-1]["messages"][:-1])
    assert open_id(page) == conversation_id


def test_search_finds_a_conversation_by_a_word_of_a_message(page, llm):
    marker = word()
    conversation_id = start(page, llm, "A question about animals", f"The answer mentions {marker} once.")
    page.get_by_role("button", name="New chat").click()
    other_id = start(page, llm, "Something else entirely", "Nothing to see.")
    assert other_id != conversation_id
    search = page.get_by_role("searchbox", name="Search conversations")
    search.fill(marker)
    expect(item(page, conversation_id)).to_be_visible()
    expect(item(page, other_id)).to_have_count(0)
    search.fill(word())
    expect(page.locator(".conv")).to_have_count(0)
    expect(page.locator("#conv-status")).to_contain_text("No conversation matches")
    search.fill("")
    expect(item(page, other_id)).to_be_visible()


def test_rename_inline(page, llm):
    conversation_id = start(page, llm, f"Name me {word()}", "Named.")
    menu(page, conversation_id, "Rename").click()
    box = item(page, conversation_id).get_by_role("textbox", name="Conversation title")
    expect(box).to_be_focused()
    box.fill("Trip planning <b>notes</b>")
    box.press("Enter")
    link = item(page, conversation_id).locator(".conv-link")
    expect(link).to_have_text("Trip planning <b>notes</b>")
    expect(page).to_have_title(re.compile("^Trip planning <b>notes</b>"))
    page.reload()
    expect(item(page, conversation_id).locator(".conv-link")).to_have_text("Trip planning <b>notes</b>")
    assert item(page, conversation_id).locator("b").count() == 0
    # A double click renames too; Escape leaves the title as it was.
    item(page, conversation_id).locator(".conv-link").dblclick()
    box = item(page, conversation_id).get_by_role("textbox", name="Conversation title")
    expect(box).to_have_value("Trip planning <b>notes</b>")
    box.fill("not this")
    box.press("Escape")
    expect(item(page, conversation_id).locator(".conv-link")).to_have_text("Trip planning <b>notes</b>")


def test_delete_asks_first(page, llm, live):
    conversation_id = start(page, llm, f"Delete me {word()}", "Soon gone.")
    menu(page, conversation_id, "Delete").click()
    confirm = item(page, conversation_id).get_by_role("group", name=re.compile("^Delete"))
    expect(confirm).to_contain_text("cannot be undone")
    # The list refreshing meanwhile (another tab, a finished answer) does not take the question away.
    with page.expect_response(lambda r: "/api/conversations?" in r.url):
        page.evaluate("document.dispatchEvent(new Event('visibilitychange'))")
    page.wait_for_timeout(100)
    expect(confirm).to_be_visible()
    confirm.get_by_role("button", name="Cancel").click()
    expect(confirm).to_have_count(0)
    expect(item(page, conversation_id)).to_be_visible()
    assert page.request.get(f"{live.url}/api/conversations/{conversation_id}").status == 200

    menu(page, conversation_id, "Delete").click()
    item(page, conversation_id).get_by_role("group", name=re.compile("^Delete")).get_by_role(
        "button", name="Delete"
    ).click()
    expect(item(page, conversation_id)).to_have_count(0)
    # It was open: the page is a new chat now.
    expect(page.locator(".msg")).to_have_count(0)
    assert "c=" not in page.url
    assert page.request.get(f"{live.url}/api/conversations/{conversation_id}").status == 404
    page.reload()
    expect(page.locator("#conv-groups")).to_be_visible()
    expect(item(page, conversation_id)).to_have_count(0)


def test_export_links_download_markdown_and_json(page, llm):
    marker = word()
    conversation_id = start(page, llm, f"Export {marker}", "Exported answer.")
    entry = item(page, conversation_id)
    entry.locator(".conv-menu-btn").click()
    with page.expect_download() as info:
        entry.get_by_role("link", name="Export as Markdown").click()
    markdown = Path(info.value.path()).read_text(encoding="utf-8")
    assert f"Export {marker}" in markdown and "Exported answer." in markdown
    entry.locator(".conv-menu-btn").click()
    with page.expect_download() as info:
        entry.get_by_role("link", name="Export as JSON").click()
    exported = json.loads(Path(info.value.path()).read_text(encoding="utf-8"))
    assert f"Export {marker}" in json.dumps(exported) and "Exported answer." in json.dumps(exported)


def test_editing_a_message_makes_a_branch_and_the_old_one_comes_back(page, llm, watch):
    conversation_id = start(page, llm, "first version", "Answer to the first.")
    llm.enqueue(TextReply("A follow-up answer."))
    send(page, "a follow-up")
    wait_finished(page)
    first = page.locator(".msg.user").first
    first.get_by_role("button", name="Edit message").click()
    box = first.get_by_role("textbox", name="Edit your message")
    expect(box).to_have_value("first version")
    llm.enqueue(TextReply("Answer to the second."))
    box.fill("second version")
    first.get_by_role("button", name="Send").click()
    expect(wait_finished(page)).to_contain_text("Answer to the second.")
    # The edit replaced the message and everything after it.
    expect(page.locator(".msg.user .bubble")).to_have_text(["second version"])
    edit = sent_messages(watch.sent, "chat")[-1]
    assert edit["edit_of"] and edit["conversation_id"] == conversation_id
    versions = page.locator(".msg.user").first.get_by_role("group", name="Versions")
    expect(versions.locator(".branch-pos")).to_have_text("2/2")
    versions.get_by_role("button", name="Previous version").click()
    expect(page.locator(".msg.user .bubble")).to_have_text(["first version", "a follow-up"])
    expect(last_answer(page)).to_contain_text("A follow-up answer.")
    versions = page.locator(".msg.user").first.get_by_role("group", name="Versions")
    expect(versions.locator(".branch-pos")).to_have_text("1/2")
    # The branch shown is the one a reload brings back.
    page.reload()
    expect(page.locator(".msg.user .bubble")).to_have_text(["first version", "a follow-up"])
    page.locator(".msg.user").first.get_by_role("button", name="Next version").click()
    expect(page.locator(".msg.user .bubble")).to_have_text(["second version"])
    expect(last_answer(page)).to_contain_text("Answer to the second.")


def test_regenerate_the_last_answer(page, llm, watch):
    start(page, llm, f"Tell me a joke {word()}", "First joke.")
    llm.enqueue(TextReply("Second joke."))
    last_answer(page).get_by_role("button", name="Regenerate answer").click()
    expect(wait_finished(page)).to_contain_text("Second joke.")
    expect(page.locator(".msg.assistant")).to_have_count(1)
    assert sent_messages(watch.sent, "chat")[-1]["regenerate"] is True
    versions = last_answer(page).get_by_role("group", name="Versions")
    expect(versions.locator(".branch-pos")).to_have_text("2/2")
    versions.get_by_role("button", name="Previous version").click()
    expect(last_answer(page)).to_contain_text("First joke.")
    expect(last_answer(page).get_by_role("group", name="Versions").locator(".branch-pos")).to_have_text("1/2")


def test_copy_a_whole_message(open_page, llm):
    page = open_page(permissions=["clipboard-read", "clipboard-write"])
    llm.enqueue(TextReply("An answer with **bold** and `code`."))
    send(page, "copy this question")
    expect(wait_finished(page).locator("strong")).to_have_text("bold")
    copy = last_answer(page).get_by_role("button", name="Copy answer")
    copy.click()
    expect(copy).to_have_text("Copied")
    assert page.evaluate("navigator.clipboard.readText()") == "An answer with **bold** and `code`."
    page.locator(".msg.user").first.get_by_role("button", name="Copy message").click()
    expect(page.locator(".msg.user").first.get_by_role("button", name="Copy message")).to_have_text("Copied")
    assert page.evaluate("navigator.clipboard.readText()") == "copy this question"


def test_incognito_leaves_nothing_in_the_sidebar(page, llm, watch, live):
    marker = word()
    switch = page.get_by_role("switch", name="Incognito")
    switch.check()
    banner = page.locator("#incognito-banner")
    expect(banner).to_be_visible()
    expect(banner).to_contain_text("Nothing of it is saved")
    llm.enqueue(TextReply(f"Secret answer {marker}."))
    send(page, f"secret {marker}")
    expect(wait_finished(page)).to_contain_text(marker)
    assert sent_messages(watch.sent, "chat")[-1]["incognito"] is True
    assert "c=" not in page.url
    page.get_by_role("searchbox", name="Search conversations").fill(marker)
    expect(page.locator("#conv-status")).to_contain_text("No conversation matches")
    assert page.request.get(f"{live.url}/api/conversations?q={marker}").json()["conversations"] == []
    # Switching it off starts a chat that is saved again.
    switch.uncheck()
    expect(banner).to_be_hidden()
    expect(page.locator(".msg")).to_have_count(0)


def test_a_turn_waiting_for_approval_survives_a_reload(page, llm, watch):
    marker = word()
    llm.enqueue(ToolCallReply([ToolCall("toolbox_delete_everything", "{}")]), TextReply(f"Deleted {marker}."))
    send(page, "delete everything please")
    tool = card(page, "toolbox_delete_everything")
    expect(tool.locator("form.approval")).to_be_visible()
    conversation_id = open_id(page)
    page.reload()
    page.get_by_role("status").filter(has_text="Connected").wait_for()
    expect(page.locator(".msg.user .bubble")).to_have_text(["delete everything please"])
    tool = card(page, "toolbox_delete_everything")
    expect(tool).to_have_attribute("data-state", "awaiting")
    tool.get_by_role("button", name="Approve").click()
    expect(tool).to_have_attribute("data-state", "done")
    expect(wait_finished(page)).to_contain_text(f"Deleted {marker}.")
    assert sent_messages(watch.sent, "attach")[-1]["conversation_id"] == conversation_id
    # Finished and stored: another reload shows it done.
    page.reload()
    expect(last_answer(page)).to_contain_text(f"Deleted {marker}.")
    expect(card(page, "toolbox_delete_everything")).to_have_attribute("data-state", "done")


def test_a_reconnect_reattaches_to_the_running_turn(open_page, live, llm, watch):
    proxy = TcpProxy(live.port)
    proxy.start()
    try:
        page = open_page(url=proxy.url)
        llm.enqueue(
            ToolCallReply([ToolCall("toolbox_slow", '{"steps": 12, "delay_s": 0.5}')]), TextReply("Counted it all.")
        )
        send(page, "count for a while")
        expect(card(page, "toolbox_slow")).to_have_attribute("data-state", "running")
        conversation_id = open_id(page)
        proxy.cut()
        expect(page.locator("#conn")).to_have_attribute("data-state", "reconnecting")
        proxy.restore()
        expect(page.locator("#conn")).to_have_attribute("data-state", "connected", timeout=20_000)
        expect(card(page, "toolbox_slow")).to_have_attribute("data-state", "running")
        expect(wait_finished(page)).to_contain_text("Counted it all.")
        expect(card(page, "toolbox_slow")).to_have_attribute("data-state", "done")
        assert sent_messages(watch.sent, "attach")[-1]["conversation_id"] == conversation_id
    finally:
        proxy.cut()


def test_the_compliance_level_is_restored_with_the_conversation(page, llm):
    level = page.get_by_role("combobox", name="Compliance level")
    level.select_option("Internal")
    conversation_id = start(page, llm, f"internal matters {word()}", "Kept internal.")
    expect(item(page, conversation_id).locator(".conv-level")).to_have_text("Internal")
    page.get_by_role("button", name="New chat").click()
    level.select_option("")
    item(page, conversation_id).locator(".conv-link").click()
    expect(last_answer(page)).to_contain_text("Kept internal.")
    expect(level).to_have_value("Internal")


def test_phone_width_the_sidebar_is_a_drawer(open_page, llm, shots):
    page = open_page(width=390, height=844)
    sidebar = page.get_by_role("complementary", name="Conversations")
    expect(sidebar).to_be_hidden()
    first_id = start(page, llm, f"phone one {word()}", "First on the phone.")
    page.get_by_role("button", name="New chat").click()
    expect(page.locator(".msg")).to_have_count(0)
    page.get_by_role("button", name="Conversations").click()
    expect(sidebar).to_be_visible()
    page.wait_for_timeout(300)  # the drawer slides in
    shots(page, "16-phone-sidebar")
    # Links that do not fit the phone's top bar are in the drawer.
    expect(sidebar.get_by_role("link", name="API tokens")).to_be_visible()
    item(page, first_id).locator(".conv-link").click()
    expect(sidebar).to_be_hidden()
    expect(last_answer(page)).to_contain_text("First on the phone.")
    assert open_id(page) == first_id
    page.get_by_role("button", name="Conversations").click()
    page.keyboard.press("Escape")
    expect(sidebar).to_be_hidden()
    expect(page.get_by_role("button", name="Conversations")).to_be_focused()
    assert page.evaluate("document.documentElement.scrollWidth") <= 390
    assert page.locator("#model").bounding_box()["width"] >= 100, "the model picker was squeezed out"
    expect(page.get_by_role("link", name="API tokens")).to_be_hidden()


def test_a_level_that_does_not_fit_starts_a_new_conversation_and_says_so(page, llm):
    level = page.get_by_role("combobox", name="Compliance level")
    level.select_option("Internal")
    first_id = start(page, llm, f"at internal {word()}", "Internal answer.")
    level.select_option("External")  # Internal is not allowed with External
    llm.enqueue(TextReply("External answer."))
    send(page, "now external")
    expect(wait_finished(page)).to_contain_text("External answer.")
    expect(page.locator(".notice-restart")).to_contain_text("new conversation")
    expect(page.locator(".msg.user .bubble")).to_have_text(["now external"])
    second_id = open_id(page)
    assert second_id != first_id
    expect(item(page, second_id)).to_have_attribute("aria-current", "page")
    expect(item(page, first_id)).to_be_visible()
    assert all("Internal answer." not in json.dumps(m) for m in llm.requests[-1]["messages"])


def test_a_server_restart_brings_the_conversation_back(open_page, restartable, llm, watch):
    page = open_page(url=restartable.url)
    conversation_id = start(page, llm, "remember the number 42", "I will remember 42.")
    # A turn is running when the server goes down: it cannot finish.
    llm.enqueue(ToolCallReply([ToolCall("toolbox_slow", '{"steps": 40, "delay_s": 0.5}')]))
    send(page, "count for a long while")
    expect(card(page, "toolbox_slow")).to_have_attribute("data-state", "running")
    restartable.stop()
    expect(page.locator("#conn")).to_have_attribute("data-state", "reconnecting")
    restartable.start()
    expect(page.locator("#conn")).to_have_attribute("data-state", "connected", timeout=40_000)
    expect(page.locator(".msg.user .bubble")).to_have_text(["remember the number 42", "count for a long while"])
    expect(page.locator(".msg.assistant").first).to_contain_text("I will remember 42.")
    # Drawn again from the store: a stop by a restart is stored as a failed answer that says the
    # server restarted (not as cancelled by the user).
    expect(last_answer(page)).to_have_attribute("data-finish", "error")
    expect(card(page, "toolbox_slow")).to_have_attribute("data-state", "failed")
    assert open_id(page) == conversation_id
    # The conversation goes on with what came before.
    llm.enqueue(TextReply("You said 42."))
    send(page, "what number?")
    expect(wait_finished(page)).to_contain_text("You said 42.")
    assert "remember the number 42" in json.dumps(llm.requests[-1]["messages"])
    assert sent_messages(watch.sent, "chat")[-1]["conversation_id"] == conversation_id


def test_conversations_are_grouped_by_day(page):
    groups = page.evaluate("""async () => {
        const { dayGroup } = await import("/static/sidebar.js");
        const now = new Date(2026, 10, 24, 15, 0);
        const at = (daysAgo, hour = 12) => new Date(2026, 10, 24 - daysAgo, hour).toISOString();
        return [at(0, 1), at(1), at(2), at(7, 13), at(8), new Date(2026, 0, 5).toISOString(), "not a date"]
            .map((iso) => dayGroup(iso, now));
    }""")
    assert groups == [
        "Today",
        "Yesterday",
        "Previous 7 days",
        "Previous 7 days",
        "November 2026",
        "January 2026",
        "Older",
    ]


def test_an_answer_that_failed_can_be_regenerated(page, llm):
    llm.enqueue(ErrorReply(401, "invalid api key"))
    send(page, f"fail first {word()}")
    failed = last_answer(page)
    expect(failed).to_have_attribute("data-finish", "error")
    expect(failed.get_by_role("alert")).to_be_visible()
    regenerate = failed.get_by_role("button", name="Regenerate answer")
    expect(regenerate).to_be_visible()
    expect(page.locator(".msg.user").first.get_by_role("button", name="Edit message")).to_be_visible()
    llm.enqueue(TextReply("Recovered."))
    regenerate.click()
    expect(wait_finished(page)).to_contain_text("Recovered.")
    expect(page.locator(".msg.assistant")).to_have_count(1)


def test_a_question_from_a_tool_can_be_answered_after_a_reload(page, llm):
    llm.enqueue(ToolCallReply([ToolCall("toolbox_ask_name", "{}")]), TextReply("Nice to meet you after a reload."))
    send(page, "ask my name")
    expect(card(page, "toolbox_ask_name").locator("form.elicitation")).to_contain_text("Who are you?")
    open_id(page)
    page.reload()
    page.get_by_role("status").filter(has_text="Connected").wait_for()
    form = card(page, "toolbox_ask_name").locator("form.elicitation")
    expect(form).to_contain_text("Who are you?")
    form.get_by_label("name").fill("Ada")
    form.get_by_label("age").fill("36")
    form.get_by_role("button", name="Accept").click()
    expect(card(page, "toolbox_ask_name").locator(".result-summary")).to_have_text("hello Ada, age 36")
    expect(wait_finished(page)).to_contain_text("Nice to meet you after a reload.")


def test_a_message_typed_while_the_conversation_reloads_goes_out_after(open_page, live, llm, watch):
    proxy = TcpProxy(live.port)
    proxy.start()
    try:
        page = open_page(url=proxy.url)
        conversation_id = start(page, llm, f"before the outage {word()}", "Before.")
        page.wait_for_load_state("networkidle")
        held = []  # the conversation's GET after the reconnect waits until the message is typed
        page.route(
            re.compile(rf".*/api/conversations/{conversation_id}$"),
            lambda route: held.append(route) if not held else route.continue_(),
        )
        proxy.cut()
        expect(page.locator("#conn")).to_have_attribute("data-state", "reconnecting")
        proxy.restore()
        expect(page.locator("#conn")).to_have_attribute("data-state", "connected", timeout=20_000)
        expect(page.locator("#composer-hint")).to_contain_text("Loading the conversation")
        llm.enqueue(TextReply("After the reload."))
        send(page, "typed while loading")
        assert held and sent_messages(watch.sent, "chat")[-1]["content"] != "typed while loading"
        for route in held:
            route.continue_()
        page.unroute(re.compile(rf".*/api/conversations/{conversation_id}$"))
        expect(wait_finished(page)).to_contain_text("After the reload.")
        expect(page.locator(".msg.user .bubble")).to_have_text(
            [re.compile("^before the outage"), "typed while loading"]
        )
        assert sent_messages(watch.sent, "chat")[-1]["conversation_id"] == conversation_id
    finally:
        proxy.cut()


def test_the_sidebar_stays_as_it_was_left(page):
    sidebar = page.get_by_role("complementary", name="Conversations")
    expect(sidebar).to_be_visible()
    toggle = page.get_by_role("button", name="Conversations", exact=True)
    toggle.click()
    expect(sidebar).to_be_hidden()
    expect(toggle).to_have_attribute("aria-expanded", "false")
    # With the sidebar away, "New chat" is in the top bar.
    expect(page.get_by_role("button", name="New chat")).to_be_visible()
    page.reload()
    expect(sidebar).to_be_hidden()
    toggle.click()
    expect(sidebar).to_be_visible()
    page.reload()
    expect(sidebar).to_be_visible()


def test_a_reloaded_tool_card_keeps_its_files(page, llm):
    llm.enqueue(ToolCallReply([ToolCall("toolbox_make_report", "{}")]), TextReply("Here is the report."))
    send(page, f"make a report {word()}")
    wait_finished(page)
    open_id(page)
    page.reload()
    canvas = page.get_by_role("complementary", name="Canvas")
    expect(canvas).to_be_hidden()  # a stored conversation does not throw files at the reader
    chips = card(page, "toolbox_make_report").locator(".artifacts button")
    expect(chips).to_have_count(2)
    chips.filter(has_text="dot.png").click()
    expect(canvas).to_be_visible()
    expect(canvas.locator(".canvas-view:not([hidden]) img")).to_be_visible()
    expect(canvas.locator(".canvas-view:not([hidden]) img")).to_have_js_property("complete", True)
    assert canvas.locator(".canvas-view:not([hidden]) img").evaluate("img => img.naturalWidth") > 0


def test_show_more_pages_through_a_long_list(page, live):
    with ws_connect(f"ws://127.0.0.1:{live.port}/ws", open_timeout=10) as ws:
        ws.recv(timeout=10)
        for i in range(52):
            ws.send(json.dumps({"type": "chat", "content": f"bulk {i}", "conversation_id": uuid.uuid4().hex}))
            while json.loads(ws.recv(timeout=30))["type"] != "message_done":
                pass
    total = len(page.request.get(f"{live.url}/api/conversations?limit=200").json()["conversations"])
    assert total > 52
    page.reload()
    items = page.locator(".conv")
    expect(items).to_have_count(50)
    page.get_by_role("button", name="Show more").click()
    expect(items).to_have_count(min(total, 100))
    ids = items.evaluate_all("nodes => nodes.map(n => n.dataset.id)")
    assert len(set(ids)) == len(ids)


@pytest.mark.timeout(240)  # 16 turns of 150,000 characters are written first
def test_a_conversation_longer_than_one_page_opens_at_its_newest_page(page, live, llm):
    """The server answers a long conversation a page at a time (about 2 MB of text each); the
    page draws the newest page at once (opening costs a page, not the conversation) and reads
    the older pages when the reader asks, drawn above, the reader's place kept; a turn after
    that still gets its ids and actions."""
    marker = word()
    with ws_connect(f"ws://127.0.0.1:{live.port}/ws", open_timeout=10) as ws:
        conversation_id = json.loads(ws.recv(timeout=10))["conversation_id"]
        for i in range(16):  # 16 questions of 150,000 characters: three pages
            llm.enqueue(TextReply(f"answer {i} {marker}"))
            ws.send(
                json.dumps(
                    {"type": "chat", "content": f"question {i} " + "x" * 150_000, "conversation_id": conversation_id}
                )
            )
            while json.loads(ws.recv(timeout=30))["type"] != "message_done":
                pass
    first = page.request.get(f"{live.url}/api/conversations/{conversation_id}").json()
    assert first["has_more"] and 0 < len(first["messages"]) < 32
    page.goto(f"{live.url}/?c={conversation_id}")
    answers = page.locator(".msg.assistant").filter(has_text=marker)
    expect(answers.last).to_contain_text(f"answer 15 {marker}")
    drawn = answers.count()
    assert drawn < 16  # the newest page only
    earlier = page.get_by_role("button", name="Show earlier messages")
    while earlier.count():
        earlier.scroll_into_view_if_needed()
        top = page.locator(".msg[data-message-id]").first
        held = top.get_attribute("data-message-id")
        at = top.bounding_box()["y"]
        earlier.click()
        expect(answers).not_to_have_count(drawn)
        drawn = answers.count()
        # The reader's place is kept: the message that was first stays where it was on screen, as
        # the older page goes in above it (in slices: the list is busy until the last is in).
        assert abs(page.locator(f'.msg[data-message-id="{held}"]').bounding_box()["y"] - at) < 2
        expect(page.locator("#messages")).not_to_have_attribute("aria-busy", "true")
        assert abs(page.locator(f'.msg[data-message-id="{held}"]').bounding_box()["y"] - at) < 2
    expect(answers).to_have_count(16)
    expect(answers.first).to_contain_text(f"answer 0 {marker}")
    expect(page.locator(".msg.user")).to_have_count(16)
    llm.enqueue(TextReply(f"answer 16 {marker}"))
    box = page.get_by_role("textbox", name="Message")
    box.fill("one more")
    box.press("Enter")
    expect(answers).to_have_count(17)
    expect(page.locator(".msg.assistant").last.get_by_role("button", name="Regenerate answer")).to_be_visible()
