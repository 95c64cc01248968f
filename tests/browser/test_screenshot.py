"""The README screenshot's conversation (scripts/screenshot.py) works: the demo
model charts a small table with the bundled dataviz server.  The picture goes
to tests/browser/screenshots/; the tracked docs/screenshot.png is left alone
(`uv run python scripts/screenshot.py` regenerates it on demand)."""

from __future__ import annotations

import importlib.util
from pathlib import Path

from playwright.sync_api import expect

from tests.browser.helpers import card

ROOT = Path(__file__).resolve().parents[2]
DOCS_SCREENSHOT = ROOT / "docs" / "screenshot.png"


def _script():
    spec = importlib.util.spec_from_file_location("screenshot_script", ROOT / "scripts" / "screenshot.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_readme_screenshot_conversation(page, shots):
    before = DOCS_SCREENSHOT.stat().st_mtime_ns if DOCS_SCREENSHOT.exists() else None
    script = _script()
    script.converse(page)
    chart = card(page, "dataviz_chart_csv")
    expect(chart).to_have_attribute("data-state", "done")
    expect(page.locator(".msg.assistant").last).to_contain_text("Demo model")
    expect(page.locator(".tool-card")).to_have_count(1)
    expect(page.locator(".msg.user .bubble").last).to_have_text(script.MESSAGE)
    path = shots(page, "00-readme")
    assert path.parent.name == "screenshots" and path.exists()
    after = DOCS_SCREENSHOT.stat().st_mtime_ns if DOCS_SCREENSHOT.exists() else None
    assert after == before, "the tests must not rewrite the tracked docs/screenshot.png"
