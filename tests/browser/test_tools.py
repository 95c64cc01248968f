"""Tool cards, approvals, questions from tools, and Stop."""

from __future__ import annotations

import json

from playwright.sync_api import expect

from tests.browser.helpers import card, last_answer, send, sent_messages, wait_finished
from tests.support.llm_double import TextReply, ToolCall, ToolCallReply


def test_a_tool_card_runs_with_progress_and_finishes(page, llm, shots):
    llm.enqueue(
        ToolCallReply([ToolCall("toolbox_slow", '{"steps": 4, "delay_s": 0.6}')]), TextReply("Counted to **four**.")
    )
    send(page, "count slowly")
    slow = card(page, "toolbox_slow")
    expect(slow).to_have_attribute("data-state", "running")
    expect(slow.locator(".tool-server")).to_have_text("on toolbox")
    expect(slow.locator(".tool-status")).to_contain_text("Running ·")
    bar = slow.locator("progress")
    expect(bar).to_be_visible()
    expect(slow.locator(".tool-progress-text")).to_contain_text("step")
    first = slow.locator(".tool-status").inner_text()
    expect(slow.locator(".tool-status")).not_to_have_text(first, timeout=5_000)  # the elapsed time ticks
    shots(page, "03-tool-running")
    expect(slow).to_have_attribute("data-state", "done")
    expect(slow.locator(".tool-status")).to_contain_text("Done")
    assert bar.evaluate("b => b.value / b.max") == 1.0
    # Arguments are in a closed <details>, pretty printed.
    args = slow.locator("details.tool-args")
    expect(args.locator("pre")).to_be_hidden()
    args.locator("summary").click()
    assert json.loads(args.locator("pre").inner_text()) == {"steps": 4, "delay_s": 0.6}
    assert "\n" in args.locator("pre").inner_text()
    # The result summary expands to the full result.
    output = slow.locator("details.tool-output")
    expect(output.locator(".result-summary")).to_have_text("counted 4")
    output.locator("summary").click()
    expect(output.locator("pre")).to_have_text("counted 4")
    answer = wait_finished(page)
    expect(answer.locator("strong")).to_have_text("four")
    # The card sits before the text written after it.
    order = answer.locator(".blocks > *").evaluate_all("nodes => nodes.map(n => n.className)")
    assert order.index("tool-card") < order.index("answer-text")


def test_a_failing_tool_asks_first_then_shows_its_error(page, llm, shots):
    llm.enqueue(
        ToolCallReply([ToolCall("toolbox_boom", '{"message": "disk on fire"}')], text="Let me *try* that."),
        TextReply("It failed."),
    )
    send(page, "break it")
    boom = card(page, "toolbox_boom")
    expect(boom).to_have_attribute("data-state", "awaiting")
    expect(boom.locator(".tool-status")).to_have_text("Waiting for your approval")
    prompt = boom.locator("form.approval")
    expect(prompt).to_contain_text("does not say it is read-only")
    shots(page, "04-approval")
    prompt.get_by_role("button", name="Approve").click()
    expect(boom).to_have_attribute("data-state", "failed")
    expect(boom.locator(".tool-error")).to_have_text("disk on fire")
    expect(boom.locator(".tool-status")).to_contain_text("Failed")
    answer = wait_finished(page)
    # Text from both rounds, rendered once each.
    expect(answer.locator(".answer-text em")).to_have_text("try")
    assert answer.inner_text().count("that.") == 1 and answer.inner_text().count("It failed.") == 1


def test_approving_with_edited_arguments_and_denying(page, llm, watch):
    llm.enqueue(ToolCallReply([ToolCall("toolbox_delete_everything", "{}")]), TextReply("Deleted."))
    send(page, "delete everything")
    tool = card(page, "toolbox_delete_everything")
    editor = tool.get_by_label("Arguments (JSON, you may edit them)")
    expect(editor).to_have_value("{}")
    # Invalid JSON is caught before anything is sent.
    editor.fill("{not json")
    tool.get_by_role("button", name="Approve").click()
    expect(tool.locator(".field-error")).to_contain_text("not valid JSON")
    editor.fill("[1, 2]")
    tool.get_by_role("button", name="Approve").click()
    expect(tool.locator(".field-error")).to_contain_text("must be a JSON object")
    assert sent_messages(watch.sent, "approval_response") == []
    editor.fill("{}")
    tool.get_by_role("button", name="Approve").click()
    expect(tool).to_have_attribute("data-state", "done")
    expect(tool.locator(".result-summary")).to_have_text("deleted (not really)")
    expect(tool.locator(".approval-answer")).to_have_text("Approved.")
    wait_finished(page)

    llm.enqueue(ToolCallReply([ToolCall("toolbox_delete_everything", "{}")]), TextReply("I will not."))
    send(page, "delete it again")
    tool = card(page, "toolbox_delete_everything")
    tool.get_by_role("button", name="Deny").click()
    expect(tool).to_have_attribute("data-state", "failed")
    expect(tool.locator(".tool-error")).to_contain_text("denied")
    expect(wait_finished(page)).to_contain_text("I will not.")
    answers = sent_messages(watch.sent, "approval_response")
    assert [a["approved"] for a in answers] == [True, False]
    assert "arguments" not in answers[0]


def test_allow_for_this_conversation_stops_asking(page, llm, watch):
    llm.enqueue(
        ToolCallReply([ToolCall("toolbox_delete_everything", "{}")]),
        TextReply("one"),
        ToolCallReply([ToolCall("toolbox_delete_everything", "{}")]),
        TextReply("two"),
    )
    send(page, "delete")
    card(page, "toolbox_delete_everything").get_by_role("button", name="Allow for this conversation").click()
    wait_finished(page)
    send(page, "delete more")
    expect(wait_finished(page)).to_contain_text("two")
    expect(card(page, "toolbox_delete_everything")).to_have_attribute("data-state", "done")
    answers = sent_messages(watch.sent, "approval_response")
    assert len(answers) == 1 and answers[0]["remember"] is True


def test_a_question_from_a_tool_round_trips(page, llm, shots):
    llm.enqueue(ToolCallReply([ToolCall("toolbox_ask_name", "{}")]), TextReply("Nice to meet you."))
    send(page, "ask my name")
    tool = card(page, "toolbox_ask_name")
    form = tool.locator("form.elicitation")
    expect(form).to_contain_text("Who are you?")
    shots(page, "05-elicitation")
    # Required fields are enforced by the form.
    form.get_by_role("button", name="Accept").click()
    expect(form).to_be_visible()
    form.get_by_label("name").fill("Ada")
    form.get_by_label("age").fill("36")
    form.get_by_role("button", name="Accept").click()
    expect(tool.locator(".result-summary")).to_have_text("hello Ada, age 36")
    wait_finished(page)


def test_a_richer_form_sends_typed_values(page, llm, watch):
    llm.enqueue(ToolCallReply([ToolCall("fixtures_order", "{}")]), TextReply("Ordered."))
    send(page, "order")
    tool = card(page, "fixtures_order")
    form = tool.locator("form.elicitation")
    expect(form.get_by_label("Email")).to_have_attribute("type", "email")
    expect(form.get_by_label("Delivery date")).to_have_attribute("type", "date")
    form.get_by_label("Email").fill("not an email")
    form.get_by_label("Size").select_option(label="large")
    form.get_by_label("Quantity").fill("3")
    form.get_by_role("button", name="Accept").click()
    assert sent_messages(watch.sent, "elicitation_response") == []  # the browser refused the bad email
    form.get_by_label("Email").fill("ada@example.com")
    form.get_by_label("Quantity").fill("11")
    form.get_by_role("button", name="Accept").click()
    assert sent_messages(watch.sent, "elicitation_response") == []  # over the maximum
    form.get_by_label("Quantity").fill("3")
    form.get_by_label("Gift wrap").check()
    form.get_by_role("group", name="Extras").get_by_label("olives").check()
    form.get_by_role("group", name="Extras").get_by_label("basil").check()
    form.get_by_label("Delivery date").fill("2030-05-17")
    form.get_by_role("button", name="Accept").click()
    expected = {
        "email": "ada@example.com",
        "size": "large",
        "quantity": 3,
        "gift": True,
        "extras": ["olives", "basil"],
        "when": "2030-05-17",
    }
    expect(tool.locator(".result-summary")).to_have_text("order: " + json.dumps(expected, sort_keys=True))
    answer = sent_messages(watch.sent, "elicitation_response")[-1]
    assert answer["action"] == "accept" and answer["content"] == expected
    wait_finished(page)


def test_declining_a_question(page, llm):
    llm.enqueue(ToolCallReply([ToolCall("toolbox_ask_name", "{}")]), TextReply("Fine."))
    send(page, "ask my name")
    tool = card(page, "toolbox_ask_name")
    tool.get_by_role("button", name="Decline").click()
    expect(tool.locator(".result-summary")).to_have_text("no answer (decline)")
    wait_finished(page)


def test_stop_ends_a_running_turn_and_sending_works_again(page, llm, shots):
    llm.enqueue(ToolCallReply([ToolCall("toolbox_hang", "{}")]))
    send(page, "hang")
    hang = card(page, "toolbox_hang")
    expect(hang).to_have_attribute("data-state", "running")
    page.get_by_role("button", name="Stop").click()
    answer = wait_finished(page, "cancelled")
    expect(answer.locator(".finish-note")).to_have_text("Stopped.")
    expect(hang).to_have_attribute("data-state", "failed")
    expect(hang.locator(".tool-status")).to_have_text("Cancelled")
    shots(page, "06-stopped")
    page.get_by_role("textbox", name="Message").fill("are you there?")
    expect(page.get_by_role("button", name="Send")).to_be_enabled()
    llm.enqueue(TextReply("back again"))
    send(page, "are you there?")
    expect(wait_finished(page)).to_contain_text("back again")
    assert last_answer(page).locator(".tool-card").count() == 0


def test_an_approval_names_its_tool_and_lands_in_that_tools_card(page, llm):
    # Two calls under one id (a model can send that): the approval for the
    # destructive one must not appear inside the harmless one's card.
    llm.enqueue(
        ToolCallReply(
            [
                ToolCall("toolbox_slow", '{"steps": 3, "delay_s": 0.5}', id="dup"),
                ToolCall("toolbox_delete_everything", "{}", id="dup"),
            ]
        ),
        TextReply("done"),
    )
    send(page, "two calls")
    danger = card(page, "toolbox_delete_everything")
    prompt = danger.locator("form.approval")
    expect(prompt.locator(".approval-title")).to_have_text(
        "Approval needed to run toolbox_delete_everything on toolbox"
    )
    expect(prompt.locator(".approval-tool")).to_be_visible()
    expect(prompt.locator(".approval-server")).to_be_visible()
    slow = card(page, "toolbox_slow")
    expect(slow.locator("form.approval")).to_have_count(0)
    prompt.get_by_role("button", name="Deny").click()
    expect(danger).to_have_attribute("data-state", "failed")
    expect(slow).to_have_attribute("data-state", "done")
    expect(slow.locator(".result-summary")).to_have_text("counted 3")
    wait_finished(page)


def test_a_json_result_is_summarized_in_one_line(page, llm):
    llm.enqueue(ToolCallReply([ToolCall("fixtures_stats", "{}")]), TextReply("ok"))
    send(page, "stats")
    stats = card(page, "fixtures_stats")
    expect(stats).to_have_attribute("data-state", "done")
    expect(stats.locator(".result-summary")).to_have_text("rows: 1204, columns: 7")
    wait_finished(page)
