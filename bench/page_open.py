"""Opening long conversations in the page (real Chromium through Playwright):
1. the time from navigating to a conversation's link to its newest answer on screen, for
   conversations of 900 and 5,000 messages (each assistant answer markdown of ~600 characters,
   a code block in every fifth), then to every message of its page drawn (the older ones go in
   above the newest in slices: the end of `#messages[aria-busy]`), with the page's long tasks
   (PerformanceObserver `longtask`) until then;
2. the page's JavaScript heap (after a forced garbage collection, CDP `Runtime.getHeapUsage`)
   after opening the first of 20 conversations of 50 messages from the sidebar, and after the
   twentieth: what opening conversations one after another leaves behind.

    uv run python bench/page_open.py [--sizes 900,5000] [--runs 3] [--json]
"""

from __future__ import annotations

import asyncio
import itertools
import os
import statistics
import tempfile
import time
from pathlib import Path
from typing import Any

import _support as S

CHROMIUM_ARGS = ["--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage"]
OWNER = "dev@localhost"
SMALL, SMALL_MESSAGES = 20, 50
OBSERVE = """
window.__sb = {longtasks: [], drawn: 0, filled: 0, frames: []};
new PerformanceObserver((list) => {
  for (const e of list.getEntries()) __sb.longtasks.push([e.startTime, e.duration]);
}).observe({type: "longtask", buffered: true});
// When the newest answer is drawn (seen in the page, not by polling it), and each frame's start: the
// frame after the one that drew it begins once that one is painted.
new MutationObserver((records, observer) => {
  if (!records.some((r) => [...r.addedNodes].some((n) => n.textContent?.includes("END-OF-")))) return;
  observer.disconnect();
  __sb.drawn = performance.now();
}).observe(document, {childList: true, subtree: true});
// When the last slice is in: the message list is no longer busy.
new MutationObserver((records) => {
  if (__sb.drawn && records.some((r) => r.target.id === "messages" && !r.target.hasAttribute("aria-busy"))) {
    __sb.filled ||= performance.now();
  }
}).observe(document, {attributes: true, attributeFilter: ["aria-busy"], subtree: true});
const frame = () => { __sb.frames.push(performance.now()); if (__sb.frames.length < 5000) requestAnimationFrame(frame); };
requestAnimationFrame(frame);
"""

# Where the time to the newest answer goes: the page's own load, then the conversation's GET.
TIMING = """(path) => {
  const nav = performance.getEntriesByType("navigation")[0];
  const get = performance.getEntriesByType("resource").find((e) => new URL(e.name).pathname === path);
  return {html_ms: nav.responseEnd, dom_ms: nav.domContentLoadedEventEnd, get_start_ms: get?.startTime ?? 0,
    get_wait_ms: get ? get.responseStart - get.requestStart : 0, get_end_ms: get?.responseEnd ?? 0};
}"""


def _answer(i: int, last: str | None) -> str:
    code = f"\n\n```python\ndef step_{i}(x):\n    return x * {i} + 1\n```\n" if i % 5 == 0 else "\n"
    text = (
        f"## Step {i}\n\nThe host keeps **every** message of a long conversation, and the page shows "
        f"the newest first. Point {i} of the plan:\n\n- read the context\n- call the tool\n- write the "
        f"answer with *care*{code}\nA closing paragraph that makes the answer about six hundred characters "
        "long, as a typical model's short answer is, with `inline code` and a [link](https://example.com)."
    )
    return text + (f"\n\n{last}" if last else "")


async def seed(folder: Path, sizes: list[int]) -> dict[str, str]:
    """The conversations, written through the store; returns id -> the marker its newest answer ends with."""
    from switchboard.store import open_store
    from switchboard.store.message_data import AssistantData

    markers: dict[str, str] = {}
    store = await open_store(f"sqlite+aiosqlite:///{folder}/data/switchboard.db")
    try:
        wanted = [(f"small-{n:02d}", SMALL_MESSAGES) for n in range(SMALL)] + [(f"long-{n}", n) for n in sizes]
        for cid, count in wanted:
            await store.create_conversation(id=cid, owner=OWNER, title=cid, model=None, compliance_level=None)
            markers[cid] = f"END-OF-{cid}"
            parent = None
            for i in range(count):
                user = i % 2 == 0
                last = markers[cid] if i >= count - 2 and not user else None
                content = f"Question {i}: what is the next step?" if user else _answer(i, last)
                # A stored answer says how it ended (one that does not is settled again on opening).
                data: AssistantData | None = None if user else {"finish_reason": "stop"}
                message = await store.add_message(
                    cid,
                    id=f"{cid}-m{i:05d}",
                    parent_id=parent,
                    role="user" if user else "assistant",
                    content=content,
                    data=data,
                )
                parent = message.id
    finally:
        await store.close()
    return markers


def _open_by_link(browser: Any, app: S.App, cid: str, marker: str, latency_ms: float = 0.0) -> dict[str, float]:
    page = browser.new_page(viewport={"width": 1280, "height": 800})
    page.add_init_script(OBSERVE)
    if latency_ms:  # a network's round trip added to every request (CDP), as between a browser and a server
        cdp = page.context.new_cdp_session(page)
        cdp.send("Network.enable")
        cdp.send(
            "Network.emulateNetworkConditions",
            {"offline": False, "latency": latency_ms, "downloadThroughput": -1, "uploadThroughput": -1},
        )
    page.goto(f"{app.base}/?c={cid}", wait_until="commit")
    page.locator(".msg.assistant", has_text=marker).last.wait_for(state="visible", timeout=120_000)
    shown_ms = page.evaluate("performance.now()")  # from the navigation's start
    page.locator("#messages:not([aria-busy])").wait_for(state="attached", timeout=120_000)
    # (the page before slices has no aria-busy: then all is drawn with the newest)
    drawn_ms = page.evaluate("__sb.filled || __sb.drawn")
    page.wait_for_timeout(100)  # a long task is reported once it has ended
    newest_drawn_ms, frames = page.evaluate("[window.__sb.drawn, window.__sb.frames]")
    after = [f for f in frames if f > newest_drawn_ms]
    opening = [f for f in frames if newest_drawn_ms <= f <= drawn_ms + 20]
    tasks = [d for _, d in page.evaluate("window.__sb.longtasks")]
    timing = page.evaluate(TIMING, f"/api/conversations/{cid}")
    messages = page.locator(".msg").count()
    page.close()
    return {
        "shown_ms": shown_ms,
        "drawn_ms": drawn_ms,
        "newest_drawn_ms": newest_drawn_ms,
        "painted_ms": after[1] if len(after) > 1 else float("nan"),
        "frame_gap_ms": max((b - a for a, b in itertools.pairwise(opening)), default=0.0),
        "longtasks": len(tasks),
        "longest_ms": max(tasks, default=0.0),
        "tbt_ms": sum(max(0.0, d - 50) for d in tasks),
        "messages_drawn": messages,
        **timing,
    }


def _heap_mib(cdp: Any) -> float:
    cdp.send("HeapProfiler.collectGarbage")
    return float(cdp.send("Runtime.getHeapUsage")["usedSize"]) / 2**20


def _heap_over_twenty(browser: Any, app: S.App, markers: dict[str, str]) -> dict[str, float]:
    page = browser.new_page(viewport={"width": 1280, "height": 800})
    cdp = page.context.new_cdp_session(page)
    page.goto(app.base + "/")
    page.get_by_role("status").filter(has_text="Connected").wait_for(timeout=60_000)
    heaps: list[float] = []
    started = time.monotonic()
    for n in range(SMALL):
        cid = f"small-{n:02d}"
        page.locator(f'.conv[data-id="{cid}"] .conv-link').click()
        page.locator(".msg.assistant", has_text=markers[cid]).last.wait_for(state="visible", timeout=60_000)
        page.locator("#messages:not([aria-busy])").wait_for(state="attached", timeout=60_000)
        if n in (0, SMALL - 1):
            heaps.append(_heap_mib(cdp))
    seconds = time.monotonic() - started
    page.close()
    return {"heap_after_1_mib": heaps[0], "heap_after_20_mib": heaps[1], "open_20_s": seconds}


def main() -> None:
    p = S.parser(__doc__.split("\n\n")[0])
    p.add_argument("--sizes", default="900,5000", help="messages in each long conversation")
    p.add_argument("--runs", type=int, default=3, help="page openings per conversation (the median is kept)")
    p.add_argument("--latency-ms", type=float, default=0.0, help="a round trip added to every request (0: none)")
    args = p.parse_args()
    started, load = time.monotonic(), [round(x, 2) for x in os.getloadavg()]
    sizes = [int(x) for x in args.sizes.split(",")]
    from playwright.sync_api import sync_playwright

    data: dict[str, Any] = {"sizes": sizes}
    with tempfile.TemporaryDirectory(prefix="bench-page-open-") as tmp:
        folder = Path(tmp)
        env = S.write_site(folder, {}, None)
        (folder / "data").mkdir()
        seeded = time.monotonic()
        markers = asyncio.run(seed(folder, sizes))
        data["seed_s"] = round(time.monotonic() - seeded, 1)
        with S.app_process(folder, env) as app, sync_playwright() as pw:
            browser = pw.chromium.launch(executable_path="/usr/bin/chromium", args=CHROMIUM_ARGS)
            opened: dict[int, list[dict[str, float]]] = {}
            for size in sizes:
                cid = f"long-{size}"
                opened[size] = [
                    _open_by_link(browser, app, cid, markers[cid], args.latency_ms) for _ in range(args.runs)
                ]
            data["open"] = opened
            data["heap"] = _heap_over_twenty(browser, app, markers)
            browser.close()

    print(f"\nOpening a conversation from its link, to its newest answer on screen (median of {args.runs})\n")
    S.print_table(
        [
            "messages",
            "newest answer shown ms",
            "runs ms",
            "all drawn ms",
            "long tasks",
            "longest ms",
            "total blocking ms",
            "drawn",
        ],
        [
            [
                size,
                statistics.median(r["shown_ms"] for r in runs),
                " / ".join(f"{r['shown_ms']:.0f}" for r in runs),
                statistics.median(r["drawn_ms"] for r in runs),
                statistics.median(r["longtasks"] for r in runs),
                statistics.median(r["longest_ms"] for r in runs),
                statistics.median(r["tbt_ms"] for r in runs),
                runs[0]["messages_drawn"],
            ]
            for size, runs in opened.items()
        ],
    )
    print("\nWhere the time goes (ms from the navigation; the first opening, then the median of all): the page's")
    print(
        "HTML in, the page loaded (DOMContentLoaded: its scripts run), the conversation's GET sent, the server's wait before answering, the answer"
    )
    print("in, the newest answer drawn and then painted (seen in the page: the next frame began), seen by the")
    print("bench's polling; and the longest time between two frames from the newest drawn to the last slice\n")
    keys = [
        "html_ms",
        "dom_ms",
        "get_start_ms",
        "get_wait_ms",
        "get_end_ms",
        "newest_drawn_ms",
        "painted_ms",
        "shown_ms",
    ]
    keys.append("frame_gap_ms")
    S.print_table(
        [
            "messages",
            "HTML in",
            "page loaded",
            "GET sent",
            "GET server wait",
            "GET done",
            "newest drawn",
            "painted",
            "seen",
            "longest frame gap while drawing",
        ],
        [
            row
            for size, runs in opened.items()
            for row in (
                [f"{size} first", *(runs[0][k] for k in keys)],
                [f"{size} median", *(statistics.median(r[k] for r in runs) for k in keys)],
            )
        ],
    )
    heap = data["heap"]
    print(f"\n{SMALL} conversations of {SMALL_MESSAGES} messages opened one after another from the sidebar\n")
    S.print_table(
        ["heap after the 1st MiB", f"heap after the {SMALL}th MiB", "all opened in s"],
        [[heap["heap_after_1_mib"], heap["heap_after_20_mib"], heap["open_20_s"]]],
    )
    S.report("page_open", data, args, started, load)


if __name__ == "__main__":
    main()
