"""Background tasks in the page (real Chromium): the conversation lists its running tasks
with status and message, a task's question is answered in the list, Cancel stops a task, and a
finished task's result appears in the thread, also after a reload."""

from __future__ import annotations

import sys

import pytest
from playwright.sync_api import expect

from tests.browser.conftest import ready_app
from tests.browser.helpers import send, wait_finished
from tests.support.harness import PROJECT_ROOT, double_model, free_port, make_settings, write_config
from tests.support.llm_double import TextReply, ToolCall, ToolCallReply

TASKER = PROJECT_ROOT / "tests" / "support" / "servers" / "tasker.py"


@pytest.fixture(scope="module")
def tasks_app(tmp_path_factory, llm):
    tmp = tmp_path_factory.mktemp("browser-tasks")
    write_config(
        tmp / "defaults",
        servers={
            "tasker": {
                "command": sys.executable,
                "args": [str(TASKER)],
                "approval": "never",
                "description": "Background work",
            }
        },
        models=[double_model(llm)],
        default_model="double",
    )
    port = free_port()
    settings = make_settings(tmp, port=port)
    with ready_app(settings, {"DOUBLE_KEY": "x"}, port) as server:
        yield server


@pytest.fixture
def tasks_page(browser, tasks_app):
    context = browser.new_context(viewport={"width": 1280, "height": 800})
    errors: list[str] = []
    page = context.new_page()
    page.set_default_timeout(20_000)
    page.on("pageerror", lambda exc: errors.append(str(exc)))
    page.goto(tasks_app.url + "/")
    page.get_by_role("status").filter(has_text="Connected").wait_for()
    yield page
    context.close()
    assert errors == [], errors


def start(page, llm, tool: str, arguments: str) -> None:
    llm.enqueue(ToolCallReply([ToolCall(tool, arguments)]), TextReply("It runs in the background."))
    send(page, f"run {tool}")
    wait_finished(page)


def test_running_tasks_are_listed_cancelled_and_their_results_shown(tasks_page, llm, shots):
    page = tasks_page
    tasks = page.get_by_role("region", name="Background tasks")
    start(page, llm, "tasker_forever", "{}")
    row = tasks.locator(".task-item").filter(has_text="tasker_forever")
    expect(row).to_have_attribute("data-status", "working")
    expect(row.locator(".task-message")).to_contain_text("still working")  # the server's progress message
    shots(page, "tasks-running")
    row.get_by_role("button", name="Cancel").click()
    expect(row).to_have_count(0)
    expect(tasks).to_be_hidden()
    cancelled = page.locator(".tool-card.task-result").last
    expect(cancelled).to_have_attribute("data-state", "failed")
    expect(cancelled).to_contain_text("The task was cancelled.")

    start(page, llm, "tasker_crunch", '{"steps": 3, "delay": 0.4}')
    expect(tasks.locator(".task-item").filter(has_text="tasker_crunch")).to_be_visible()
    result = page.locator(".tool-card.task-result").filter(has_text="crunched 3 steps")
    expect(result).to_have_attribute("data-state", "done")
    expect(tasks).to_be_hidden()

    page.reload()  # the results are stored in the conversation
    page.get_by_role("status").filter(has_text="Connected").wait_for()
    expect(page.locator(".tool-card").filter(has_text="crunched 3 steps")).to_have_count(1)


def test_a_tasks_question_is_answered_in_the_list(tasks_page, llm):
    page = tasks_page
    start(page, llm, "tasker_survey", '{"topic": "shed"}')
    row = page.get_by_role("region", name="Background tasks").locator(".task-item").filter(has_text="tasker_survey")
    expect(row).to_have_attribute("data-status", "input_required")
    form = row.locator("form.elicitation")
    expect(form).to_contain_text("Which colour for the shed?")
    form.get_by_label("colour").fill("green")
    form.get_by_role("button", name="Accept").click()
    expect(page.locator(".tool-card.task-result").filter(has_text="survey of shed: green")).to_have_attribute(
        "data-state", "done"
    )
