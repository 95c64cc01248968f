"""Two checkouts' apps side by side: app CPU per stored tool turn, turns interleaved one by one.

`bench/overhead.py` run after run cannot tell 2 % apart on a shared machine: its figures move by
10-20 % with the load of the moment. Here two `switchboard serve` processes, this checkout's and
another's (`--against DIR`, a checkout with its own `.venv`), serve the same kind of site (the
toolbox over stdio, the LLM double answering with a tool call and then text, conversations stored
in SQLite); each turn goes to one then the other, alternating which goes first, so load falls on
both alike. CPU is each app process's own (/proc) over all its measured turns, its threads included.

    uv run python bench/paired.py --against ../base [--turns 400] [--rounds 3] [--json]
"""

from __future__ import annotations

import asyncio
import os
import tempfile
import time
from pathlib import Path
from typing import Any

import _support as S

USER_TEXT = "Please echo hello with the toolbox."


async def _measure(args: Any, apps: dict[str, S.App]) -> dict[str, dict[str, float]]:
    return await S.interleaved_turns(apps, turns=args.turns, warmup=args.warmup, text=USER_TEXT)


def main() -> None:
    p = S.parser(__doc__.splitlines()[0])
    p.add_argument("--against", required=True, type=Path, help="the other checkout (with its own .venv)")
    p.add_argument("--turns", type=int, default=400)
    p.add_argument("--warmup", type=int, default=30)
    p.add_argument("--rounds", type=int, default=3, help="fresh app processes per round")
    args = p.parse_args()
    started, load_before = time.monotonic(), [round(x, 2) for x in os.getloadavg()]
    other_python = str(args.against.resolve() / ".venv" / "bin" / "python")
    rounds: list[dict[str, dict[str, float]]] = []
    with tempfile.TemporaryDirectory(prefix="bench-paired-") as tmp, S.double_process() as double:
        for r in range(args.rounds):
            sites = {}
            for name in ("this", "other"):
                folder = Path(tmp) / f"{name}{r}"
                sites[name] = (
                    folder,
                    S.write_site(folder, {"toolbox": S.toolbox_entry(approval="never")}, double.base_url),
                )
            with (
                S.app_process(*sites["this"]) as this,
                S.app_process(*sites["other"], command=[other_python, "-m", "switchboard"]) as other,
            ):
                rounds.append(asyncio.run(_measure(args, {"this": this, "other": other})))
    rows = [
        [
            r + 1,
            f["other"]["cpu_ms_per_turn"],
            f["this"]["cpu_ms_per_turn"],
            f"{(f['this']['cpu_ms_per_turn'] / f['other']['cpu_ms_per_turn'] - 1) * 100:+.1f} %",
            f["other"]["turn_ms_p50"],
            f["this"]["turn_ms_p50"],
        ]
        for r, f in enumerate(rounds)
    ]
    S.print_table(["round", "other: app CPU ms/turn", "this", "this vs other", "other: turn p50 ms", "this"], rows)
    S.report(
        "paired", {"rounds": rounds, "against": str(args.against), "turns": args.turns}, args, started, load_before
    )


if __name__ == "__main__":
    main()
