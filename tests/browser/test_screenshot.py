"""The README screenshot: a conversation with a tool card and the canvas open."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

from playwright.sync_api import expect

from tests.browser.helpers import card, send, wait_finished
from tests.support.llm_double import TextReply, ToolCall, ToolCallReply

DOCS_SCREENSHOT = Path(__file__).resolve().parents[2] / "docs" / "screenshot.png"
CSV = "month,signups,churned\nJan,120,14\nFeb,135,11\nMar,160,17\nApr,190,12\nMay,240,19\nJun,275,15\n"
ANSWER = (
    "Signups grew **every month**, from 120 in January to 275 in June (+129 %).\n\n"
    "| month | signups | churned |\n|---|---|---|\n| Jan | 120 | 14 |\n| Jun | 275 | 15 |\n\n"
    "Churn stayed flat at 11–19 a month, so net growth tracks signups. "
    "The chart and a full report are open on the right."
)


def test_readme_screenshot(page, llm, shots):
    arguments = json.dumps({"csv_text": CSV, "x": "month", "y": ["signups", "churned"], "kind": "bar",
                            "title": "Signups and churn, H1"})
    llm.enqueue(ToolCallReply([ToolCall("dataviz_chart_csv", arguments)]), TextReply(ANSWER, chunks=6))
    send(page, "Chart signups and churn by month from the CSV I pasted, and tell me the trend.")
    chart = card(page, "dataviz_chart_csv")
    expect(chart).to_have_attribute("data-state", "done")
    expect(page.locator("#canvas .viewer-image img")).to_be_visible()
    wait_finished(page)
    page.locator("#canvas .viewer-image img").evaluate("img => img.decode()")
    path = shots(page, "00-readme")
    DOCS_SCREENSHOT.parent.mkdir(exist_ok=True)
    shutil.copyfile(path, DOCS_SCREENSHOT)
