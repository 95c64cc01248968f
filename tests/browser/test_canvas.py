"""Artifacts open in the canvas, each in the right kind of viewer."""

from __future__ import annotations

import io
import json

import httpx
from playwright.sync_api import expect

from tests.browser.helpers import card, send, wait_finished
from tests.support.llm_double import TextReply, ToolCall, ToolCallReply


def tab(page, name):
    return page.locator("#canvas").get_by_role("tab", name=name, exact=True)


def view(page):
    return page.locator("#canvas .canvas-view:not([hidden])")


def test_image_and_html_artifacts_open_by_themselves(page, llm, shots):
    llm.enqueue(ToolCallReply([ToolCall("toolbox_make_report", "{}")]), TextReply("Here is the report."))
    send(page, "make a report")
    canvas = page.get_by_role("complementary", name="Canvas")
    expect(canvas).to_be_visible()
    # display.primary_file chose the HTML page.
    expect(tab(page, "report.html")).to_have_attribute("aria-selected", "true")
    frame = view(page).locator("iframe")
    expect(frame).to_have_attribute("sandbox", "")  # no scripts, no same-origin
    expect(frame).to_have_attribute("data-scripts", "blocked")
    expect(page.frame_locator("#canvas .canvas-view:not([hidden]) iframe").locator("h1")).to_have_text("Report")
    tab(page, "dot.png").click()
    image = view(page).locator("img")
    expect(image).to_be_visible()
    assert image.evaluate("img => img.complete && img.naturalWidth") == 1
    wait_finished(page)
    chips = card(page, "toolbox_make_report").locator(".artifacts button")
    expect(chips).to_have_count(2)
    expect(chips.first).to_contain_text("dot.png")
    # Closing hides the canvas; a chip opens it again on that file.
    page.get_by_role("button", name="Close canvas").click()
    expect(canvas).to_be_hidden()
    chips.first.click()
    expect(canvas).to_be_visible()
    expect(tab(page, "dot.png")).to_have_attribute("aria-selected", "true")
    shots(page, "07-canvas-image")


def test_pdf_markdown_csv_json_and_code_viewers(page, llm, live):
    llm.enqueue(ToolCallReply([ToolCall("fixtures_files", "{}")]), TextReply("Five files."))
    send(page, "files please")
    expect(tab(page, "report.pdf")).to_have_attribute("aria-selected", "true")
    pdf = view(page).locator("iframe.viewer-pdf")
    expect(pdf).to_be_visible()
    src = pdf.get_attribute("src")
    assert src.startswith("/api/artifacts/")
    response = httpx.get(live.url + src)
    assert response.headers["content-type"] == "application/pdf" and response.content.startswith(b"%PDF-")
    # The download button points at the selected file.
    assert page.get_by_role("link", name="Download report.pdf").get_attribute("href") == src + "?download=1"

    tab(page, "notes.md").click()
    md = view(page).locator(".viewer-markdown")
    expect(md.locator("h1")).to_have_text("Notes")
    expect(md.locator("table td").first).to_have_text("1")
    expect(md.get_by_role("button", name="Copy code")).to_be_visible()

    tab(page, "cities.csv").click()
    table = view(page).locator("table.csv-table")
    expect(table.locator("th")).to_have_text(["city", "population", "note"])
    expect(table.locator("tbody tr")).to_have_count(3)
    rows = table.locator("tbody tr").evaluate_all("rows => rows.map(r => [...r.cells].map(c => c.textContent))")
    assert rows == [
        ["Oslo", "709037", "capital, largest"],
        ["Bergen", "291940", 'said "hi"'],
        ["Tromsø", "77544", "two\nlines"],
    ]

    tab(page, "data.json").click()
    expect(view(page).locator("pre.viewer-json")).to_have_text(
        '{\n  "ok": true,\n  "items": [\n    1,\n    2,\n    3\n  ]\n}'
    )

    tab(page, "script.py").click()
    code = view(page).locator("pre.viewer-text")
    expect(code).to_contain_text("return '<b>not bold</b>'")
    expect(code.locator("b")).to_have_count(0)
    # Tabs are keyboard reachable: arrows move between files.
    tab(page, "script.py").press("ArrowLeft")
    expect(tab(page, "data.json")).to_be_focused()
    expect(tab(page, "data.json")).to_have_attribute("aria-selected", "true")
    wait_finished(page)


def test_the_canvas_can_be_resized_with_its_handle(page, llm):
    llm.enqueue(ToolCallReply([ToolCall("toolbox_make_report", "{}")]), TextReply("ok"))
    send(page, "report")
    canvas = page.locator("#canvas")
    expect(canvas).to_be_visible()
    before = canvas.bounding_box()["width"]
    handle = page.get_by_role("separator", name="Resize canvas").bounding_box()
    x, y = handle["x"] + handle["width"] / 2, handle["y"] + 200
    page.mouse.move(x, y)
    page.mouse.down()
    page.mouse.move(x - 150, y, steps=5)
    page.mouse.up()
    after = canvas.bounding_box()["width"]
    assert 130 < after - before < 170
    page.get_by_role("separator", name="Resize canvas").press("ArrowRight")
    assert canvas.bounding_box()["width"] < after
    wait_finished(page)


def _frame(page, selector="#canvas .canvas-view:not([hidden]) iframe"):
    return page.frame_locator(selector)


def test_html_artifacts_run_scripts_only_for_a_server_trusted_with_them(page, llm, live):
    # A server with "artifact_scripts": true in mcp.json: its page's script runs.
    llm.enqueue(ToolCallReply([ToolCall("trusted_scripted_page", "{}")]), TextReply("trusted"))
    send(page, "trusted page")
    frame = view(page).locator("iframe.viewer-html")
    expect(frame).to_have_attribute("data-scripts", "allowed")
    assert frame.get_attribute("sandbox") == "allow-scripts"
    expect(_frame(page).locator("#marker")).to_have_text("script ran")
    wait_finished(page)
    page.get_by_role("button", name="Close canvas").click()

    # Any other server's page: the same script does not run.
    llm.enqueue(ToolCallReply([ToolCall("fixtures_scripted_page", "{}")]), TextReply("untrusted"))
    send(page, "untrusted page")
    expect(page.locator("#canvas")).to_be_visible()
    frame = view(page).locator("iframe.viewer-html")
    expect(frame).to_have_attribute("data-scripts", "blocked")
    assert frame.get_attribute("sandbox") == ""
    expect(_frame(page).locator("#marker")).to_have_text("script did not run")
    wait_finished(page)
    src = frame.get_attribute("src")
    response = httpx.get(live.url + src)
    csp = response.headers["content-security-policy"]
    assert "script-src 'none'" in csp and "allow-scripts" not in csp
    assert response.headers["x-artifact-scripts"] == "blocked"

    # The rule lives on the server: a frame that allows scripts still runs none.
    page.evaluate(
        """(src) => {
        const forced = document.createElement('iframe');
        forced.id = 'forced';
        forced.setAttribute('sandbox', 'allow-scripts');
        forced.src = src;
        document.body.append(forced);
    }""",
        src,
    )
    expect(_frame(page, "#forced").locator("#marker")).to_have_text("script did not run")
    page.wait_for_timeout(500)
    expect(_frame(page, "#forced").locator("#marker")).to_have_text("script did not run")
    expect(_frame(page).locator("#marker")).to_have_text("script did not run")


def test_an_unstyled_html_page_follows_the_dark_theme_and_fits_the_canvas(open_page, llm):
    page = open_page(color_scheme="dark")
    llm.enqueue(ToolCallReply([ToolCall("toolbox_make_report", "{}")]), TextReply("ok"))
    send(page, "report in the dark")
    frame = view(page).locator("iframe.viewer-html")
    expect(frame).to_be_visible()
    heading = _frame(page).locator("h1")
    expect(heading).to_have_text("Report")
    wait_finished(page)
    # The page inside is dark like the app around it: light text on a dark frame.
    color = heading.evaluate("h => getComputedStyle(h).color")
    assert color == "rgb(255, 255, 255)", color
    pixel = frame.screenshot()
    assert _mean_brightness(pixel) < 60
    # The frame fits its panel.
    panel = page.locator("#canvas-body").bounding_box()
    box = frame.bounding_box()
    assert box["x"] >= panel["x"] - 1 and box["x"] + box["width"] <= panel["x"] + panel["width"] + 1
    assert box["y"] + box["height"] <= panel["y"] + panel["height"] + 1


def _mean_brightness(png: bytes) -> float:
    from PIL import Image

    image = Image.open(io.BytesIO(png)).convert("L")
    pixels = list(image.getdata())
    return sum(pixels) / len(pixels)


def test_the_dataviz_report_fits_the_canvas_and_follows_the_dark_theme(open_page, llm):
    page = open_page(color_scheme="dark")
    csv_text = "month,signups,churned\nJan,120,14\nFeb,135,11\nMar,160,17\n"
    llm.enqueue(
        ToolCallReply([ToolCall("dataviz_chart_csv", json.dumps({"csv_text": csv_text, "title": "Signups"}))]),
        TextReply("ok"),
    )
    send(page, "chart it")
    tab(page, "report.html").click()
    body = _frame(page).locator("body")
    expect(body.locator("h1")).to_have_text("Signups")
    wait_finished(page)
    # Its wide statistics table scrolls inside itself; the page fits the frame.
    overflow = body.evaluate("b => document.documentElement.scrollWidth - document.documentElement.clientWidth")
    assert overflow <= 0, f"the report is {overflow} px wider than the canvas"
    assert body.evaluate("b => getComputedStyle(b).backgroundColor") == "rgb(20, 21, 24)"
    assert body.evaluate("b => getComputedStyle(b).color") == "rgb(230, 231, 234)"
