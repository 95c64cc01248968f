"""Background tasks and multi round-trip questions across a restart of the host, in real Chromium.

The host is `switchboard serve` in its own process (stopped with SIGTERM and started again on the
same port and database); the task server (tests/support/servers/tasker.py over stateless
streamable HTTP) is another process that goes on meanwhile. The page reconnects by itself:
- a running task is listed again, finishes, its result is shown and the model continues from it;
- a task that asks a question midway asks again after the restart, and the page's answer finishes it;
- a question a tool asked within a turn (`input_required`) cannot outlive the process that asked it:
  the turn is stored failed, saying so, and the user can ask again."""

from __future__ import annotations

import json
from collections.abc import Iterator

import httpx
import pytest
from playwright.sync_api import Page, expect

from tests.browser.helpers import card, last_answer, send, wait_finished
from tests.support.harness import double_model, free_port, toolbox_entry, write_config
from tests.support.llm_double import TextReply, ToolCall, ToolCallReply
from tests.support.serve import ServeProcess, tasker_http

pytestmark = pytest.mark.timeout(240)  # three start-ups of the app on a busy machine


@pytest.fixture(scope="module")
def tasker_port() -> Iterator[int]:
    port = free_port()
    with tasker_http(port):
        yield port


@pytest.fixture
def host(tmp_path, llm, tasker_port) -> Iterator[ServeProcess]:
    write_config(
        tmp_path / "defaults",
        models=[double_model(llm)],
        default_model="double",
        servers={
            "tasker": {"url": f"http://127.0.0.1:{tasker_port}/mcp", "approval": "never"},
            "toolbox": toolbox_entry(approval="never"),
        },
    )
    # A short shutdown grace: a turn waiting for a person would wait it out in full.
    served = ServeProcess(tmp_path, env={"DOUBLE_KEY": "x", "SWITCHBOARD_SHUTDOWN_GRACE_S": "1"})
    served.start()
    try:
        served.wait_ready()
        yield served
    finally:
        served.stop()


def restart(page: Page, host: ServeProcess) -> None:
    conn = page.locator("#conn")
    host.stop()
    expect(conn).to_have_attribute("data-state", "reconnecting")
    host.start()
    host.wait_ready()
    expect(conn).to_have_attribute("data-state", "connected", timeout=20_000)


def tasks_region(page: Page):
    return page.get_by_role("region", name="Background tasks")


def continue_from(page: Page, llm, result: str) -> None:
    """The user asks the model to go on: it sees the task's result in the conversation."""
    llm.enqueue(TextReply("Going on from the task's result."))
    send(page, "what came of it?")
    wait_finished(page)
    expect(last_answer(page)).to_contain_text("Going on from the task's result.")
    sent = json.dumps(llm.requests[-1]["messages"])
    assert "The background task has finished" in sent and result in sent


def test_a_running_task_is_listed_after_a_restart_and_its_result_is_shown(page_on, host, llm, tmp_path):
    page = page_on(host.url)
    gate = tmp_path / "gate"
    llm.enqueue(
        ToolCallReply([ToolCall("tasker_until_file", json.dumps({"path": str(gate)}))]),
        TextReply("It runs in the background."),
    )
    send(page, "wait for the file")
    wait_finished(page)
    row = tasks_region(page).locator(".task-item").filter(has_text="tasker_until_file")
    expect(row).to_have_attribute("data-status", "working")
    expect(row.locator(".task-message")).to_have_text("waiting for the file")

    restart(page, host)
    expect(row).to_have_attribute("data-status", "working")  # listed again, from the new process
    [listed] = httpx.get(f"{host.url}/api/tasks", timeout=5).json()["tasks"]
    assert listed["status"] == "working"

    gate.write_text("at last")
    result = page.locator(".tool-card.task-result").filter(has_text="the file came: at last")
    expect(result).to_have_attribute("data-state", "done", timeout=20_000)
    expect(tasks_region(page)).to_be_hidden()
    continue_from(page, llm, "the file came: at last")

    page.reload()  # stored in the conversation, in order
    page.get_by_role("status").filter(has_text="Connected").wait_for()
    expect(page.locator(".tool-card").filter(has_text="the file came: at last")).to_have_count(1)


def test_a_tasks_question_is_asked_again_after_a_restart_and_answered_in_the_page(page_on, host, llm):
    page = page_on(host.url)
    llm.enqueue(ToolCallReply([ToolCall("tasker_survey", '{"topic": "gate"}')]), TextReply("Surveying."))
    send(page, "survey the gate")
    wait_finished(page)
    row = tasks_region(page).locator(".task-item").filter(has_text="tasker_survey")
    expect(row).to_have_attribute("data-status", "input_required")
    form = row.locator("form.elicitation")
    expect(form).to_contain_text("Which colour for the gate?")
    before = form.get_attribute("data-request-id")

    restart(page, host)
    # Asked again by the new process: the old question went with the old one, and answers nothing.
    expect(form).not_to_have_attribute("data-request-id", before or "")
    expect(form).to_contain_text("Which colour for the gate?")
    form.get_by_label("colour").fill("blue")
    form.get_by_role("button", name="Accept").click()
    result = page.locator(".tool-card.task-result").filter(has_text="survey of gate: blue")
    expect(result).to_have_attribute("data-state", "done")
    expect(tasks_region(page)).to_be_hidden()
    continue_from(page, llm, "survey of gate: blue")


def test_a_question_pending_in_a_turn_ends_the_turn_at_a_restart_and_it_can_be_asked_again(page_on, host, llm):
    servers = {s["name"]: s for s in httpx.get(f"{host.url}/api/config", timeout=5).json()["servers"]}
    assert servers["toolbox"]["protocol_version"] == "2026-07-28"  # the question is an `input_required` result
    page = page_on(host.url)
    llm.enqueue(ToolCallReply([ToolCall("toolbox_ask_name", "{}")]))  # the turn ends at the restart
    send(page, "who am I?")
    form = page.locator("form.elicitation")
    expect(form).to_contain_text("Who are you?")

    restart(page, host)
    # What the user sees: the stored turn, failed, saying why; no question left to answer.
    expect(form).to_have_count(0)
    asked = card(page, "toolbox_ask_name")
    expect(asked).to_have_attribute("data-state", "failed")
    expect(asked).to_contain_text("The server restarted while this call waited for your answer")
    answer = last_answer(page)
    expect(answer).to_have_attribute("data-finish", "error")
    expect(answer).to_contain_text("The server restarted while this answer was being written.")

    llm.enqueue(ToolCallReply([ToolCall("toolbox_ask_name", "{}")]), TextReply("Nice to meet you."))
    send(page, "who am I, again?")
    form.get_by_label("name").fill("Ada")
    form.get_by_label("age").fill("36")
    form.get_by_role("button", name="Accept").click()
    wait_finished(page)
    expect(card(page, "toolbox_ask_name")).to_contain_text("hello Ada, age 36")
