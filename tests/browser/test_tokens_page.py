"""The API tokens page: make a token (shown once), see it listed, use it as a
bearer token, revoke it (after a confirmation), and it stops working."""

from __future__ import annotations

import httpx
from playwright.sync_api import expect


def test_make_use_and_revoke_a_token_in_the_page(browser, live, shots):
    context = browser.new_context(viewport={"width": 1000, "height": 800})
    dialogs: list[str] = []
    try:
        page = context.new_page()
        page.on("dialog", lambda dialog: (dialogs.append(dialog.message), dialog.accept()))
        page.goto(live.url + "/")
        page.get_by_role("link", name="API tokens").click()
        expect(page.get_by_role("heading", name="Personal API tokens")).to_be_visible()

        page.get_by_label("What is it for?").fill("nightly report script")
        page.get_by_role("button", name="Make a token").click()
        token = page.locator("#token-value")
        expect(token).to_contain_text("sb_")
        secret = token.text_content()
        item = page.locator(".token-item", has_text="nightly report script")
        expect(item).to_be_visible()
        expect(item).to_contain_text("last used never")
        shots(page, "30-api-tokens")

        bearer = {"Authorization": f"Bearer {secret}"}
        assert httpx.get(f"{live.url}/v1/models", headers=bearer).status_code == 200
        page.reload()
        expect(page.locator("#token-value")).to_be_hidden()  # shown once only
        expect(page.locator(".token-item", has_text="nightly report script")).not_to_contain_text("last used never")

        page.get_by_role("button", name="Revoke nightly report script").click()
        expect(page.locator(".token-item", has_text="nightly report script")).to_have_count(0)
        assert dialogs and "nightly report script" in dialogs[0]
        assert httpx.get(f"{live.url}/v1/models", headers=bearer).status_code == 401
    finally:
        context.close()
