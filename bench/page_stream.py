"""A long answer streaming into the page (real Chromium), and what its live renders cost the server:

1. the page: a ~200 KB markdown answer (headings, paragraphs, lists, code, tables) streamed by the
   HTTP LLM double in small chunks to `switchboard serve`, shown by Chromium through Playwright.
   While it streams, keys are typed into the composer. Measured in the page: PerformanceObserver
   `longtask` entries (count, longest, total blocking time: the sum of each task's time over
   50 ms), Event Timing `event` entries over 16 ms for the typing (input delay = processing start
   minus the event's time), and the time from the double's last chunk to the whole answer on
   screen (the finished answer's next frame);
2. the server: app CPU per streamed KB for answers of 1 .. 200 KB through the websocket (the
   render events' share with it: the same turns with live renders too far apart to happen), and
   the CPU of the live renders alone, driven in this process as the turn loop drives them.

    uv run python bench/page_stream.py [--kib 195] [--chunk 16] [--chunk-delay 0.001] [--runs 2]
        [--sizes 1,10,50,100,195] [--trace FILE] [--app DIR] [--json]

`--app DIR` serves another checkout (with its own .venv) for an alternated before/after run; the
live renders' own CPU is always this checkout's.
"""

from __future__ import annotations

import asyncio
import json
import os
import sys
import tempfile
import time
import uuid
from pathlib import Path
from typing import Any

import _support as S
import _turns as T
from tests.support.llm_double import LLMDouble, TextReply

CHROMIUM_ARGS = ["--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage"]
TRACE_CATEGORIES = ["devtools.timeline", "disabled-by-default-devtools.timeline", "toplevel", "blink", "v8"]

_WORDS = [
    "the",
    "host",
    "streams",
    "every",
    "token",
    "of",
    "a",
    "long",
    "answer",
    "to",
    "the",
    "page",
    "while",
    "it",
    "renders",
    "markdown",
    "into",
    "sanitized",
    "html",
    "blocks",
]

OBSERVE = """
window.__sb = {longtasks: [], events: [], shown: 0, messages: 0, frameGap: 0, lastFrame: 0};
(function frame(t) {  // the longest time between two animation frames: the page not drawing
  if (__sb.lastFrame && __sb.measuring) __sb.frameGap = Math.max(__sb.frameGap, t - __sb.lastFrame);
  __sb.lastFrame = t;
  requestAnimationFrame(frame);
})(0);
const __open = WebSocket.prototype.addEventListener;
WebSocket.prototype.addEventListener = function (type, listener, options) {
  if (type === "message") {
    const counted = listener;
    listener = function (event) {
      __sb.messages += 1;  // when the page's script got message_done (the socket's delivery)
      if (!__sb.doneAt && typeof event.data === "string" && event.data.startsWith('{"type":"message_done"')) __sb.doneAt = Date.now();
      return counted.call(this, event);
    };
  }
  return __open.call(this, type, listener, options);
};
new PerformanceObserver((list) => {
  for (const e of list.getEntries()) __sb.longtasks.push([e.startTime, e.duration]);
}).observe({type: "longtask", buffered: true});
new PerformanceObserver((list) => {
  for (const e of list.getEntries()) __sb.events.push([e.name, e.startTime, e.processingStart - e.startTime, e.duration]);
}).observe({type: "event", durationThreshold: 16, buffered: true});
new MutationObserver((changes) => {
  for (const c of changes) {
    if (c.target.matches?.(".msg.assistant[data-finish]") && !__sb.shown) {
      __sb.handled = Date.now();
      requestAnimationFrame(() => setTimeout(() => { __sb.shown = Date.now(); __sb.shownAt = performance.now(); }));
    }
  }
}).observe(document, {subtree: true, attributes: true, attributeFilter: ["data-finish"]});
"""


def rich_markdown(chars: int) -> str:
    """Markdown of about `chars` characters, in sections as long answers have them: a heading, a
    paragraph, a list, a code block, a table."""
    out: list[str] = []
    size, section = 0, 0
    while size < chars:
        words = [_WORDS[(section * 7 + i) % len(_WORDS)] for i in range(70)]
        parts = [
            f"## Part {section}: {words[0]} {words[1]}\n\n",
            " ".join(words[:35]) + f" with **{words[3]}** and `{words[4]}`.\n" + " ".join(words[35:]) + ".\n\n",
            "".join(f"- item {i}: *{_WORDS[i]}* {_WORDS[i + 1]} {_WORDS[i + 2]}\n" for i in range(6)) + "\n",
            f"```python\ndef part_{section}(answer):\n    for token in answer:\n        render(token, {section})\n"
            "    return answer\n```\n\n",
            "| block | size | state |\n|---|---:|:---:|\n"
            + "".join(f"| {_WORDS[(section + i) % len(_WORDS)]} | {i * section} | done |\n" for i in range(5))
            + "\n",
            f"1. first {words[5]}\n2. second {words[6]}\n   - nested {words[7]}\n3. third\n\n> a quote about {words[8]}\n\n",
        ]
        for part in parts:
            out.append(part)
            size += len(part)
        section += 1
    return "".join(out)[:chars].rstrip() + "\n"


class _TimedDouble(LLMDouble):
    """The HTTP LLM double, noting when it sent its stream's last chunk (wall clock)."""

    last_chunk_at = 0.0

    async def _stream(self, send: Any, reply: Any, *, include_usage: bool) -> None:
        await super()._stream(send, reply, include_usage=include_usage)
        self.last_chunk_at = time.time()


def _page_run(
    browser: Any, app: S.App, double: _TimedDouble, text: str, chunk: int, trace: str | None = None
) -> dict[str, float]:
    double.enqueue(TextReply(text, chunks=max(1, len(text) // chunk)))
    page = browser.new_page(viewport={"width": 1280, "height": 800})
    page.add_init_script(OBSERVE)
    arrived: dict[str, float] = {}  # when the browser got the message_done frame (as Playwright hears of it)

    def on_socket(ws: Any) -> None:
        ws.on("framereceived", lambda frame: '"message_done"' in str(frame) and arrived.setdefault("done", time.time()))

    page.on("websocket", on_socket)
    page.goto(app.base + "/")
    page.get_by_role("status").filter(has_text="Connected").wait_for()
    box = page.get_by_role("textbox", name="Message")
    box.fill("Write the long answer.")
    if trace:  # a CDP trace of the page's main thread over the answer (chrome://tracing, Perfetto)
        browser.start_tracing(page=page, path=trace, categories=TRACE_CATEGORIES)
    start, sent_at = page.evaluate("__sb.measuring = true; performance.now()"), time.time()
    box.press("Enter")
    page.locator(".msg.assistant .answer-text").first.wait_for(timeout=60_000)
    box.click()
    typed = 0
    while not page.locator(".msg.assistant[data-finish]").count():
        page.keyboard.type("abc "[typed % 4])
        typed += 1
        page.wait_for_timeout(60)
    page.wait_for_function("() => window.__sb.shown > 0", timeout=60_000)
    sb = page.evaluate("window.__sb")
    if trace:
        browser.stop_tracing()
    messages = page.evaluate("window.__sb.messages || 0")
    html_len = page.evaluate("document.querySelector('.msg.assistant .markdown').textContent.length")
    page.close()
    tasks = [d for s, d in sb["longtasks"] if s >= start]
    events = [
        e for e in sb["events"] if e[1] >= start and e[0] in ("keydown", "keypress", "keyup", "input", "beforeinput")
    ]
    return {
        "longtasks": len(tasks),
        "longest_ms": max(tasks, default=0.0),
        "tbt_ms": sum(max(0.0, d - 50) for d in tasks),
        "last_token_to_shown_ms": (sb["shown"] / 1000 - double.last_chunk_at) * 1000,
        "last_token_to_done_frame_ms": (arrived.get("done", 0.0) - double.last_chunk_at) * 1000,
        "last_token_to_done_in_page_ms": (sb.get("doneAt", 0) / 1000 - double.last_chunk_at) * 1000,
        "done_handled_to_shown_ms": sb["shown"] - sb["handled"],
        "messages": messages,
        "keys": typed,
        "stream_s": double.last_chunk_at - sent_at,
        "slow_key_events": len(events),
        "input_delay_max_ms": max((e[2] for e in events), default=0.0),
        "key_duration_max_ms": max((e[3] for e in events), default=0.0),
        "frame_gap_max_ms": sb["frameGap"],
        "shown_text_chars": html_len,
    }


async def _ws_turn(app: S.App) -> tuple[float, list[dict[str, Any]]]:
    import websockets

    async with websockets.connect(app.ws_url, max_size=2**26) as ws:
        json.loads(await ws.recv())
        before = S.proc_cpu_s(app.pid)
        _, events = await S.ws_turn(ws, "Write the long answer.", conversation_id=uuid.uuid4().hex, timeout_s=600)
        return S.proc_cpu_s(app.pid) - before, events


def _server_runs(
    app: S.App, double: _TimedDouble, sizes: list[int], runs: int, chunk: int
) -> dict[int, dict[str, float]]:
    out: dict[int, dict[str, float]] = {}
    for kib in sizes:
        text = rich_markdown(kib * 1024)
        cpus, renders, render_kib = [], [], []
        for _ in range(runs):
            double.enqueue(TextReply(text, chunks=max(1, len(text) // chunk)))
            cpu, events = asyncio.run(_ws_turn(app))
            assert events[-1]["type"] == "message_done" and events[-1]["finish_reason"] == "stop", events[-1]
            cpus.append(cpu)
            live = [e for e in events if e["type"] == "render"]
            renders.append(len(live))
            render_kib.append(sum(len(json.dumps(e)) for e in live) / 1024)
        out[kib] = {
            "app_cpu_ms": S.percentile(cpus, 50) * 1000,
            "renders": S.percentile(renders, 50),
            "render_kib_sent": S.percentile(render_kib, 50),
        }
        out[kib]["app_cpu_ms_per_kib"] = out[kib]["app_cpu_ms"] / kib
    return out


def _render_cpu(sizes: list[int], chunk: int) -> dict[int, float]:
    """CPU (ms per KiB) of the live renders alone: the answer fed piece by piece to the turn loop's
    live renderer as often as it allows (no time between renders: the most renders there can be)."""
    out = {}
    _live_renders(rich_markdown(4096), chunk)  # warm-up: the parser's imports
    for kib in sizes:
        text = rich_markdown(kib * 1024)
        started = time.process_time()
        _live_renders(text, chunk)
        out[kib] = (time.process_time() - started) * 1000 / kib
    return out


def _live_renders(text: str, chunk: int) -> int:
    try:
        from switchboard.chat.views.live_render import LiveRender
    except ImportError:  # before live_render.py: the loop rendered the whole answer once it grew by a quarter
        from switchboard.chat.views.render import render_markdown

        done, count = 0, 0
        for end in range(chunk, len(text) + chunk, chunk):
            if end >= done * 1.25 + 64:
                render_markdown(text[:end])
                done, count = end, count + 1
        return count
    live, count = LiveRender(), 0
    for end in range(chunk, len(text) + chunk, chunk):
        if live.due(min(end, len(text))):
            live.render_now(text[:end])
            count += 1
    return count


def main() -> None:
    p = S.parser(__doc__.split("\n\n")[0])
    p.add_argument(
        "--kib", type=int, default=195, help="the page's answer, in KiB (the app cuts answers at 200,000 characters)"
    )
    p.add_argument("--chunk", type=int, default=16, help="characters per streamed chunk")
    p.add_argument(
        "--chunk-delay", type=float, default=0.0, help="seconds between chunks (0: as fast as the app takes them)"
    )
    p.add_argument("--runs", type=int, default=2, help="page runs, and websocket turns per size (the median is kept)")
    p.add_argument("--sizes", default="1,10,50,100,195", help="answer sizes (KiB) for the server's CPU")
    p.add_argument(
        "--profile", metavar="FILE", help="cProfile the app's event-loop thread over the server's turns; stats to FILE"
    )
    p.add_argument("--no-page", action="store_true", help="skip the page runs (with --profile: the server alone)")
    p.add_argument("--trace", metavar="FILE", help="a CDP trace of the first page run's main thread, to FILE (JSON)")
    p.add_argument("--app", metavar="DIR", help="serve this checkout's app (with its own .venv) instead")
    args = p.parse_args()
    started, load = time.monotonic(), [round(x, 2) for x in os.getloadavg()]
    sizes = [int(x) for x in args.sizes.split(",")]
    data: dict[str, Any] = {"kib": args.kib, "chunk": args.chunk, "chunk_delay": args.chunk_delay}
    from playwright.sync_api import sync_playwright

    with (
        tempfile.TemporaryDirectory(prefix="bench-page-stream-") as tmp,
        _TimedDouble(chunk_delay_s=args.chunk_delay) as double,
    ):
        env = S.write_site(Path(tmp), {}, double.base_url)
        python = str(Path(args.app).resolve() / ".venv" / "bin" / "python") if args.app else sys.executable
        profiler = T.Profiler(args.profile, python)
        command = profiler.command or [python, "-m", "switchboard"]
        with S.app_process(Path(tmp), profiler.env(env), command=command) as app:
            asyncio.run(_ws_turn(app))  # warm-up: litellm's first call, the first render
            page_runs: list[dict[str, float]] = []
            if not args.no_page:
                with sync_playwright() as pw:
                    browser = pw.chromium.launch(executable_path="/usr/bin/chromium", args=CHROMIUM_ARGS)
                    text = rich_markdown(args.kib * 1024)
                    page_runs = [
                        _page_run(browser, app, double, text, args.chunk, args.trace if i == 0 else None)
                        for i in range(args.runs)
                    ]
                    browser.close()
            data["page"] = page_runs
            profiler.start(app.pid)
            data["server"] = _server_runs(app, double, sizes, args.runs, args.chunk)
            asyncio.run(profiler.stop(app.pid))
    data["render_cpu_ms_per_kib"] = _render_cpu(sizes, args.chunk)

    pace = f"{args.chunk_delay * 1000:g} ms apart" if args.chunk_delay else "as fast as the app takes them"
    print(
        f"\nA {args.kib} KiB markdown answer in {args.chunk}-character chunks ({pace}), streamed into Chromium (each run)\n"
    )
    S.print_table(
        [
            "run",
            "stream s",
            "long tasks",
            "longest ms",
            "total blocking ms",
            "last token to shown ms",
            "to message_done frame ms",
            "to message_done in page ms",
            "message_done to shown ms",
            "ws messages",
            "keys typed",
            "key events > 16 ms",
            "max input delay ms",
            "max key event ms",
            "longest frame gap ms",
        ],
        [
            [
                i + 1,
                r["stream_s"],
                r["longtasks"],
                r["longest_ms"],
                r["tbt_ms"],
                r["last_token_to_shown_ms"],
                r["last_token_to_done_frame_ms"],
                r["last_token_to_done_in_page_ms"],
                r["done_handled_to_shown_ms"],
                r["messages"],
                r["keys"],
                r["slow_key_events"],
                r["input_delay_max_ms"],
                r["key_duration_max_ms"],
                r["frame_gap_max_ms"],
            ]
            for i, r in enumerate(page_runs)
        ],
    )
    print(f"\nServer: answers through the websocket (median of {args.runs}), and the live renders alone\n")
    S.print_table(
        ["KiB", "app CPU ms", "app CPU ms / KiB", "renders", "render KiB sent", "live-render CPU ms / KiB"],
        [
            [
                kib,
                s["app_cpu_ms"],
                s["app_cpu_ms_per_kib"],
                int(s["renders"]),
                s["render_kib_sent"],
                data["render_cpu_ms_per_kib"][kib],
            ]
            for kib, s in data["server"].items()
        ],
    )
    if args.profile:
        import pstats

        print(f"\nThe app's event-loop thread under cProfile ({args.profile}), by own time:")
        pstats.Stats(args.profile).sort_stats("tottime").print_stats(30)
    S.report("page_stream", data, args, started, load)


if __name__ == "__main__":
    main()
