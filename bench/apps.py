"""MCP Apps in the page (real Chromium, the app as `switchboard serve`, the demo model):

1. time from an app tool's `tool_result` reaching the page to the app's `ui/initialize`
   answered (performance marks the page sets), p50/p95, for the reference app
   `server-basic-vanillajs` (npx) and the small app of `_app_server.py`;
2. page memory with 10 and 50 apps open in one conversation: the page's JS heap and the
   sandbox frames' JS heaps (CDP `Runtime.getHeapUsage`, one reading per renderer isolate);
3. one `tools/call noop` made by an app through the bridge (measured in the app: postMessage,
   proxy, page, `POST /api/apps/{id}/rpc`, server and back), the same route called directly
   over HTTP, and the same tool called by the model (the `tool_result`'s `duration_ms`).

    uv run python bench/apps.py [--turns 20] [--calls 50] [--apps 10,50] [--json]
"""

from __future__ import annotations

import json
import os
import tempfile
import time
from pathlib import Path

import httpx
from playwright.sync_api import Page, sync_playwright

import _support as S

CHROMIUM_ARGS = [
    "--no-sandbox",
    "--disable-gpu",
    "--disable-dev-shm-usage",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--no-first-run",
]
NPX_ENV = {"PATH": "${PATH}", "HOME": "${HOME}", "npm_config_prefer_offline": "true"}


def _site(folder: Path) -> dict[str, str]:
    S.write_config(
        folder / "defaults",
        servers={
            "basic": {
                "command": "npx",
                "args": ["-y", "--silent", "@modelcontextprotocol/server-basic-vanillajs", "--stdio"],
                "env": NPX_ENV,
                "approval": "never",
            },
            "bench": {"command": "python", "args": [str(S.PROJECT_ROOT / "bench" / "_app_server.py")]},
        },
        models=[{"name": "demo", "model": "switchboard/demo"}],
        default_model="demo",
    )
    (folder / "overrides").mkdir(exist_ok=True)
    return {
        "SWITCHBOARD_DEFAULTS_DIR": str(folder / "defaults"),
        "SWITCHBOARD_CONFIG_DIR": str(folder / "overrides"),
        "SWITCHBOARD_DATA_DIR": str(folder / "data"),
        "SWITCHBOARD_LOG_DIR": str(folder / "logs"),
        "PATH": os.environ.get("PATH", "/usr/bin:/bin"),
        "HOME": os.environ.get("HOME", str(folder)),
    }


def _turn(page: Page, text: str) -> dict:
    """Send a message; wait for its answer; returns the page's last tool card call id."""
    done = page.locator(".msg.assistant[data-finish]").count()
    box = page.get_by_role("textbox", name="Message")
    box.fill(text)
    box.press("Enter")
    page.locator(".msg.assistant[data-finish]").nth(done).wait_for(timeout=60_000)
    return {"call_id": page.locator(".tool-card").last.get_attribute("data-call-id")}


def _init_ms(page: Page, call_id: str, timeout_s: float = 30) -> float:
    script = """(id) => { const a = performance.getEntriesByName(`sb:tool-result:${id}`)[0];
      const b = performance.getEntriesByName(`sb:app-initialized:${id}`)[0]; return a && b ? b.startTime - a.startTime : null; }"""
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        value = page.evaluate(script, call_id)
        if value is not None:
            return value
        page.wait_for_timeout(20)
    raise TimeoutError(f"app {call_id} did not initialize")


def _heaps(page: Page) -> tuple[float, float]:
    """(page JS heap MiB, sandbox frames' JS heaps MiB: one reading per isolate)."""
    main = page.context.new_cdp_session(page).send("Runtime.getHeapUsage")["usedSize"]
    seen: dict[tuple[int, int], int] = {}
    for frame in page.frames:
        if frame == page.main_frame or not frame.url.startswith("http://sandbox.localhost"):
            continue
        try:
            usage = page.context.new_cdp_session(frame).send("Runtime.getHeapUsage")
        except Exception:  # same process as a frame already read: no session of its own
            continue
        seen[(usage["usedSize"], usage["totalSize"])] = usage["usedSize"]
    return main / 2**20, sum(seen.values()) / 2**20


def _gc(page: Page) -> None:
    page.context.new_cdp_session(page).send("HeapProfiler.collectGarbage")


def main() -> None:
    p = S.parser(__doc__.split("\n\n")[0])
    p.add_argument("--turns", type=int, default=20)
    p.add_argument("--calls", type=int, default=50)
    p.add_argument("--apps", default="10,50")
    args = p.parse_args()
    started, load_before = time.monotonic(), [round(x, 2) for x in os.getloadavg()]
    data: dict = {}
    with (
        tempfile.TemporaryDirectory() as tmp,
        S.app_process(Path(tmp), _site(Path(tmp)), timeout_s=240) as app,
        sync_playwright() as pw,
    ):
        browser = pw.chromium.launch(executable_path="/usr/bin/chromium", args=CHROMIUM_ARGS)
        page = browser.new_page(viewport={"width": 1280, "height": 800})
        results: list[dict] = []  # tool_result events the page received

        def frames(ws) -> None:
            def take(payload) -> None:
                if isinstance(payload, str) and '"tool_result"' in payload:
                    results.append(json.loads(payload))

            ws.on("framereceived", take)

        page.on("websocket", frames)
        page.goto(app.base + "/")
        page.get_by_role("status").filter(has_text="Connected").wait_for()

        rows = []
        for label, text in (("basic-vanillajs (npx)", "basic_get-time"), ("_app_server.py", "bench_bench_open")):
            _init_ms(page, _turn(page, text)["call_id"])  # warm: the resource is read once, then cached
            times = [_init_ms(page, _turn(page, text)["call_id"]) for _ in range(args.turns)]
            rows.append([label, len(times), S.percentile(times, 50), S.percentile(times, 95)])
            data[f"init_{label}"] = times
        print("\nTool result to the app's ui/initialize answered (ms)")
        S.print_table(["app", "n", "p50", "p95"], rows)

        # 3. one tools/call: the app through the bridge, the route alone, the model.
        info = _turn(page, f'bench_bench_open {{"calls": {args.calls}}}')
        frame = (
            page.locator(".canvas-view:not([hidden]) iframe.app-frame")
            .last.content_frame.locator("iframe")
            .content_frame
        )
        frame.locator("#state").filter(has_text="done").wait_for(timeout=120_000)
        bridge = json.loads(frame.locator("#timings").text_content())
        route = []
        with httpx.Client(base_url=app.base, timeout=30) as http:
            for _ in range(args.calls):
                t0 = time.perf_counter()
                response = http.post(
                    f"/api/apps/{info['call_id']}/rpc",
                    json={"method": "tools/call", "params": {"name": "noop", "arguments": {}}},
                )
                route.append((time.perf_counter() - t0) * 1000)
                response.raise_for_status()
                time.sleep(max(0.0, 0.11 - (time.perf_counter() - t0)))  # under the app's 10 requests/s
        turns = []
        results.clear()
        for _ in range(min(args.calls, 20)):
            t0 = time.perf_counter()
            _turn(page, "bench_noop")
            turns.append((time.perf_counter() - t0) * 1000)
        model_ms = [float(e["duration_ms"]) for e in results if e.get("tool") == "bench_noop" and not e.get("from_app")]
        print("\nOne tools/call noop (ms)")
        S.print_table(
            ["path", "n", "p50", "p95"],
            [
                [
                    "app -> bridge -> POST rpc -> server (in the app)",
                    len(bridge),
                    S.percentile(bridge, 50),
                    S.percentile(bridge, 95),
                ],
                ["POST /api/apps/{id}/rpc alone (httpx)", len(route), S.percentile(route, 50), S.percentile(route, 95)],
                [
                    "the model's call (tool card duration)",
                    len(model_ms),
                    S.percentile(model_ms, 50),
                    S.percentile(model_ms, 95),
                ],
                ["the model's whole turn (demo model)", len(turns), S.percentile(turns, 50), S.percentile(turns, 95)],
            ],
        )
        data.update(bridge_ms=bridge, route_ms=route, model_call_ms=model_ms, model_turn_ms=turns)

        # 2. memory: N apps in one new conversation, each mounted (its tab shown once).
        # The baseline is the same conversation with a plain tool instead (its answers and cards).
        rows = []
        for count in [int(n) for n in args.apps.split(",")]:
            page.get_by_role("button", name="New chat").first.click()
            page.wait_for_timeout(1500)  # the old apps are torn down
            for _ in range(count):
                _turn(page, "bench_noop")
            _gc(page)
            plain = _heaps(page)[0]
            page.get_by_role("button", name="New chat").first.click()
            page.wait_for_timeout(1500)
            for _ in range(count):
                _init_ms(page, _turn(page, "basic_get-time")["call_id"])
            for tab in page.locator(".canvas-tab[data-kind=app]").all():
                tab.click()
            page.wait_for_timeout(1000)
            _gc(page)
            heap, frames = _heaps(page)
            rows.append(
                [
                    count,
                    page.locator("iframe.app-frame").count(),
                    round(plain, 1),
                    round(heap, 1),
                    round(heap - plain, 1),
                    round(frames, 1),
                ]
            )
            data[f"memory_{count}"] = {"plain_page_mib": plain, "page_mib": heap, "frames_mib": frames}
        print("\nPage memory with N apps in one conversation (MiB)")
        S.print_table(
            [
                "apps",
                "frames",
                "page heap, N plain tool turns",
                "page heap, N app turns",
                "apps' share",
                "sandbox frames' JS heap",
            ],
            rows,
        )
        browser.close()
    S.report("apps", data, args, started, load_before)


if __name__ == "__main__":
    main()
