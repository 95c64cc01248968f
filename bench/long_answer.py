"""Long answers: app CPU per answer of 2,500 / 5,000 / 10,000 / 20,000 tokens streamed from
the HTTP LLM double through the websocket (one chunk per token, markdown with headings,
lists and code), per 1,000 tokens, with the live `render` events and the final HTML.
CPU per 1,000 tokens that stays flat as answers grow means the cost is linear in length.

  * one app process (`python -m switchboard serve`), one double per answer size (models
    t2500, t5000, ...), each turn a new conversation, app CPU read from /proc around it;
  * `--against ../other-checkout` runs that checkout's app (its own .venv) too, turn by
    turn with this one, against the same doubles.

    uv run python bench/long_answer.py [--sizes 2500,5000,10000,20000] [--turns 3] [--against DIR] [--json]
"""

from __future__ import annotations

import asyncio
import json
import os
import tempfile
import time
import uuid
from contextlib import ExitStack
from pathlib import Path
from typing import Any

import _support as S


async def _turn(app: S.App, model: str) -> dict[str, float]:
    import websockets

    async with websockets.connect(app.ws_url, max_size=2**26) as ws:
        json.loads(await ws.recv())  # session
        before = S.proc_cpu_s(app.pid)
        seconds, events = await S.ws_turn(
            ws, "Write the long answer.", model=model, conversation_id=uuid.uuid4().hex, timeout_s=600
        )
        cpu = S.proc_cpu_s(app.pid) - before
    done = events[-1]
    if done.get("type") != "message_done" or done.get("finish_reason") != "stop":
        raise RuntimeError(f"the turn did not end normally: {done}")
    renders = [e for e in events if e["type"] == "render"]
    return {
        "cpu_ms": cpu * 1000,
        "wall_s": seconds,
        "tokens": sum(e["type"] == "token" for e in events),
        "renders": len(renders),
        "render_kib": sum(len(e["html"]) for e in renders) / 1024,
        "html_kib": len(done["html"]) / 1024,
    }


def main() -> None:
    p = S.parser(__doc__.split("\n\n")[0])
    p.add_argument("--sizes", default="2500,5000,10000,20000")
    p.add_argument("--turns", type=int, default=3, help="turns per size (and per checkout); the median is reported")
    p.add_argument(
        "--against", type=Path, help="another checkout (with its own .venv) to run turn by turn with this one"
    )
    args = p.parse_args()
    started, load = time.monotonic(), [round(x, 2) for x in os.getloadavg()]
    sizes = [int(x) for x in args.sizes.split(",")]
    roots = {"this": S.PROJECT_ROOT} | ({"against": args.against.resolve()} if args.against else {})
    runs: dict[str, dict[int, list[dict[str, float]]]] = {label: {n: [] for n in sizes} for label in roots}
    with ExitStack() as stack:
        doubles = {n: stack.enter_context(S.double_process(text_only=True, answer_tokens=n)) for n in sizes}
        apps: dict[str, S.App] = {}
        for label, root in roots.items():
            folder = Path(stack.enter_context(tempfile.TemporaryDirectory(prefix=f"bench-long-{label}-")))
            env = S.write_site(folder, {}, None, extra_models={f"t{n}": d.base_url for n, d in doubles.items()})
            python = str(root / ".venv" / "bin" / "python") if label != "this" else None
            apps[label] = stack.enter_context(
                S.app_process(folder, env, command=[python, "-m", "switchboard"] if python else None)
            )

        async def run() -> None:
            for label in roots:  # warm-up: the model library and the first render
                await _turn(apps[label], f"t{sizes[0]}")
            for _ in range(args.turns):
                for n in sizes:
                    for label in roots:
                        runs[label][n].append(await _turn(apps[label], f"t{n}"))
                print(f"  {_ + 1}/{args.turns} rounds done", flush=True)

        asyncio.run(run())

    data: dict[str, Any] = {"sizes": sizes, "turns": args.turns, "results": {}}
    headers = [
        "checkout",
        "tokens",
        "app CPU ms",
        "CPU ms / 1k tokens",
        "renders",
        "render KiB sent",
        "final HTML KiB",
        "wall s",
    ]
    rows = []
    for label in roots:
        data["results"][label] = {}
        for n in sizes:
            med = {key: S.percentile([r[key] for r in runs[label][n]], 50) for key in runs[label][n][0]}
            med["cpu_ms_per_1k_tokens"] = med["cpu_ms"] / (n / 1000)
            data["results"][label][n] = {"median": med, "runs": runs[label][n]}
            rows.append(
                [
                    label,
                    n,
                    med["cpu_ms"],
                    med["cpu_ms_per_1k_tokens"],
                    int(med["renders"]),
                    med["render_kib"],
                    med["html_kib"],
                    med["wall_s"],
                ]
            )
    print(
        f"\nLong answers through the websocket (median of {args.turns} turns each"
        f"{'; interleaved with ' + str(roots['against']) if args.against else ''})\n"
    )
    S.print_table(headers, rows)
    for label in roots:
        per_k = [data["results"][label][n]["median"]["cpu_ms_per_1k_tokens"] for n in sizes]
        print(
            f"{label}: CPU per 1k tokens at {sizes[-1]:,} / at {sizes[0]:,} tokens = {per_k[-1] / per_k[0]:.2f}x "
            "(1.0x: linear)"
        )
    S.report("long_answer", data, args, started, load)


if __name__ == "__main__":
    main()
