"""Regenerate the README's screenshot (docs/screenshot.png) and the admin console's
(docs/admin-console.png) on demand.

    uv run python scripts/screenshot.py [--out docs/screenshot.png] [--admin-out docs/admin-console.png]

Serves the app as `scripts/serve` does (the bundled config, the offline demo
model, the bundled MCP servers) on a free port with throw-away data and log
folders, then has real Chromium ask the demo model to chart a small table with
the bundled dataviz server (the demo model takes a tool's name and its
arguments as JSON), and captures the page.  Needs
Chromium at /usr/bin/chromium (`apt-get install -y chromium`).
"""

from __future__ import annotations

import argparse
import json
import os
import re
import signal
import socket
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import httpx

ROOT = Path(__file__).resolve().parents[1]
CHROMIUM = "/usr/bin/chromium"
CHROMIUM_ARGS = ["--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage", "--no-first-run"]
CSV = "month,signups,churned\nJan,120,14\nFeb,135,11\nMar,160,17\nApr,190,12\nMay,240,19\nJun,275,15"
ARGUMENTS = {"csv_text": CSV, "x": "month", "title": "Signups and churn, first half-year"}
MESSAGE = f"Please chart_csv our signups by month: {json.dumps(ARGUMENTS)}"


def converse(page) -> None:
    """The conversation shown in the screenshot, on an open, connected chat page:
    the demo model is picked, the chart tool runs, the chart opens in the canvas."""
    from playwright.sync_api import expect

    page.get_by_role("combobox", name="Model").select_option("demo")
    box = page.get_by_role("textbox", name="Message")
    box.fill(MESSAGE)
    box.press("Enter")
    expect(page.locator(".tool-card").last).to_have_attribute("data-state", "done", timeout=60_000)
    expect(page.locator(".msg.assistant").last).to_have_attribute("data-finish", "stop", timeout=60_000)
    # The chart's interactive app opens first; the screenshot shows the plain chart image.
    page.locator("#canvas").get_by_role("tab", name=re.compile(r"chart\.png")).click()
    image = page.locator("#canvas .viewer-image img")
    expect(image).to_be_visible()
    image.evaluate("img => img.decode()")
    page.locator("#input").blur()


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def _wait_ready(url: str, proc: subprocess.Popen, timeout: float = 90) -> None:
    deadline = time.monotonic() + timeout
    last = ""
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise SystemExit(f"the app exited with code {proc.returncode}; see the output above")
        try:
            response = httpx.get(f"{url}/readyz", timeout=5)
            if response.status_code == 200:
                return
            last = response.text
        except httpx.TransportError:
            pass
        time.sleep(0.3)
    raise SystemExit(f"the MCP servers were not ready after {timeout:.0f} s: {last}")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("--out", type=Path, default=ROOT / "docs" / "screenshot.png", help="where to write the PNG")
    parser.add_argument(
        "--admin-out", type=Path, default=ROOT / "docs" / "admin-console.png", help="the admin console's PNG"
    )
    args = parser.parse_args()
    if not Path(CHROMIUM).exists():
        raise SystemExit(f"Chromium is not installed at {CHROMIUM}: apt-get install -y chromium")
    from playwright.sync_api import sync_playwright

    port = _free_port()
    url = f"http://127.0.0.1:{port}"
    with tempfile.TemporaryDirectory(prefix="switchboard-screenshot-") as tmp:
        env = {k: v for k, v in os.environ.items() if not k.startswith("SWITCHBOARD_") and not k.endswith("_API_KEY")}
        env.update(
            {
                "SWITCHBOARD_PORT": str(port),
                "SWITCHBOARD_CONFIG_DIR": str(Path(tmp) / "overrides"),  # bundled config only
                "SWITCHBOARD_DATA_DIR": str(Path(tmp) / "data"),
                "SWITCHBOARD_LOG_DIR": str(Path(tmp) / "logs"),
            }
        )
        proc = subprocess.Popen([sys.executable, "-m", "switchboard", "serve"], cwd=ROOT, env=env)
        try:
            _wait_ready(url, proc)
            with sync_playwright() as pw:
                browser = pw.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
                context = browser.new_context(viewport={"width": 1280, "height": 800}, color_scheme="light")
                page = context.new_page()
                page.goto(url + "/")
                page.get_by_role("status").filter(has_text="Connected").wait_for()
                converse(page)
                args.out.parent.mkdir(parents=True, exist_ok=True)
                page.screenshot(path=str(args.out))
                page.goto(url + "/admin")  # the dev user administers the bundled config
                page.locator('.server-card[data-status="ready"]').first.wait_for()
                page.screenshot(path=str(args.admin_out))
                browser.close()
        finally:
            proc.send_signal(signal.SIGTERM)
            try:
                proc.wait(timeout=20)
            except subprocess.TimeoutExpired:
                proc.kill()
    print(f"wrote {args.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
