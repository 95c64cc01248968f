"""`/docs`: the HTTP API described in the browser from the app's own OpenAPI
schema, with nothing loaded from anywhere but the app."""

from __future__ import annotations

from playwright.sync_api import expect


def test_the_api_docs_page_renders_the_routes_from_the_app_alone(browser, live, shots):
    context = browser.new_context(viewport={"width": 1280, "height": 900})
    requests: list[str] = []
    problems: list[str] = []
    try:
        page = context.new_page()
        page.on("requestfinished", lambda request: requests.append(request.url))
        page.on("console", lambda msg: problems.append(msg.text) if msg.type == "error" else None)
        page.on("pageerror", lambda exc: problems.append(str(exc)))
        page.goto(live.url + "/docs")
        expect(page.get_by_role("heading", name="Switchboard").first).to_be_visible(timeout=20_000)
        expect(page.get_by_text("/api/chat").first).to_be_attached()
        expect(page.get_by_text("/v1/chat/completions").first).to_be_attached()
        shots(page, "31-api-docs")
    finally:
        context.close()
    assert all(url.startswith((live.url, "blob:", "data:")) for url in requests), [
        u for u in requests if not u.startswith(live.url)
    ]
    # ReDoc's sidebar asks its makers' CDN for their logo, which the page's CSP refused (a console
    # error on every visit): the app serves the script with an inline image there instead.
    assert not problems, problems
