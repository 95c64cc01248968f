"""Small actions and queries the browser tests share."""

from __future__ import annotations

import json

from playwright.sync_api import Locator, Page, expect


def send(page: Page, text: str) -> None:
    box = page.get_by_role("textbox", name="Message")
    box.fill(text)
    box.press("Enter")


def last_answer(page: Page) -> Locator:
    return page.locator(".msg.assistant").last


def wait_finished(page: Page, reason: str = "stop") -> Locator:
    answer = last_answer(page)
    expect(answer).to_have_attribute("data-finish", reason)
    return answer


def card(page: Page, tool: str) -> Locator:
    """The last tool card for a tool (qualified name)."""
    return page.locator(".tool-card").filter(has=page.locator(".tool-name", has_text=tool)).last


def sent_messages(frames: list[str], kind: str) -> list[dict]:
    out = []
    for frame in frames:
        try:
            message = json.loads(frame)
        except (TypeError, ValueError):
            continue
        if message.get("type") == kind:
            out.append(message)
    return out
